package app

import (
	"context"
	"errors"
	"fmt"
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
	d.Downloader, d.Warmer = mi, mi
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
		Notifier:  NewNotifier("Deltafin"),
		Idle:      NewIdleSource(),
		Power:     NewPowerSource(),
		Login:     NewLoginItem(exe, home, xdg.ConfigHome),
		Desktop:   NewDesktop(),
		KeepAwake: NewKeepAwake(),
	}, nil
}

// RunMenuBar is `deltafin` with no arguments: the menu-bar app with deps
// until Quit or ctx ends. It must run on main's goroutine (macOS runs the
// menu bar on the main thread). On a machine without a desktop session it
// fails at once with ErrNoTray.
func RunMenuBar(ctx context.Context, cfg Config, deps Deps, log *slog.Logger) error {
	warning, err := checkDesktop(ctx, cfg)
	if err != nil {
		return err
	}
	a := New(cfg, deps, log)
	if warning != "" {
		a.log.Warn(warning)
	}
	if err := a.Start(ctx); err != nil {
		return err
	}
	err = runTray(ctx, a, icons.MenuBarTemplate2x, icons.MenuBar)
	if cerr := a.Close(context.WithoutCancel(ctx)); err == nil {
		err = cerr
	}
	return err
}
