package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"

	"github.com/adrg/xdg"

	"github.com/deltafin/deltafin/icons"
)

// ErrNoTray is returned when there is no menu bar to show the app in.
var ErrNoTray = errors.New("app: no menu bar")

// MenuBarDeps returns the app's collaborators for cfg: the downloader and
// warmer over the model mirror, the API server (on demo when nothing is
// installed), and this machine's notifier, idle and power sources,
// keep-awake, login item and desktop helpers.
func MenuBarDeps(cfg Config, demo fs.FS, log *slog.Logger) (Deps, error) {
	d, err := PlatformDeps()
	if err != nil {
		return d, err
	}
	mi := newMirrorInstall(cfg)
	mi.log = log
	d.Downloader, d.Warmer = mi, mi
	d.Drafter = &drafterInstall{cfg: cfg}
	d.Server = &apiServer{cfg: cfg, mi: mi, demo: demo, log: log}
	return d, nil
}

// PlatformDeps returns this machine's notifier, idle and power sources,
// keep-awake, login item and desktop helpers.
func PlatformDeps() (Deps, error) {
	exe, err := os.Executable()
	if err != nil {
		return Deps{}, fmt.Errorf("app: own executable: %w", err)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return Deps{}, fmt.Errorf("app: home directory: %w", err)
	}
	return Deps{
		Notifier:  NewNotifier(),
		Idle:      NewIdleSource(),
		Power:     NewPowerSource(),
		Login:     NewLoginItem(exe, home, xdg.ConfigHome),
		Desktop:   NewDesktop(),
		KeepAwake: NewKeepAwake(),
	}, nil
}

// RunMenuBar is `deltafin` with no arguments: the menu-bar app with deps
// until Quit or ctx ends. It must run on main's goroutine (macOS runs the
// menu bar on the main thread). On a machine without a desktop session
// (ErrNoTray) it runs headless: the server, downloads, warming and, where a
// notification service answers, notifications, with one line on out saying
// where the API is and that the menu is unavailable, until ctx ends.
func RunMenuBar(ctx context.Context, cfg Config, deps Deps, log *slog.Logger, out io.Writer) error {
	warning, err := checkDesktop(ctx, cfg)
	headless := errors.Is(err, ErrNoTray)
	if err != nil && !headless {
		return err
	}
	a := New(cfg, deps, log)
	if warning != "" {
		a.log.Warn(warning)
	}
	if err := a.Start(ctx); err != nil {
		return err
	}
	if headless {
		err = a.runHeadless(ctx, err, out)
	} else {
		err = runTray(ctx, a, icons.MenuBarTemplate2x, icons.MenuBar)
	}
	if cerr := a.Close(context.WithoutCancel(ctx)); err == nil {
		err = cerr
	}
	return err
}

// headlessProblem is why the API does not run, whole.
func headlessProblem(st State) string {
	if st.ProblemWhole != "" {
		return st.ProblemWhole
	}
	if st.Problem != "" {
		return st.Problem
	}
	return "this build cannot serve"
}

// runHeadless says where the API is once the server answers (or why it does
// not), then keeps the app running until ctx ends.
func (a *App) runHeadless(ctx context.Context, why error, out io.Writer) error {
	reason := wholeError(why) // whole, not cut: the advice is at its end
	for {
		st := a.State()
		switch {
		case st.ServerAddr != "":
			fmt.Fprintf(out, "Deltafin is running without a menu bar (%s); the API is at %s/v1 — Ctrl-C quits\n", reason, st.ServerAddr)
		case st.Problem != "" || !st.CanServe:
			fmt.Fprintf(out, "Deltafin is running without a menu bar (%s) and without its API (%s) — Ctrl-C quits\n", reason, headlessProblem(st))
		default:
			select {
			case <-ctx.Done():
				return nil
			case <-a.Changed():
			}
			continue
		}
		<-ctx.Done()
		return nil
	}
}
