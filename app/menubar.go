package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"
)

// App is the menu-bar app: every menu action is a method on it, every
// piece of state lives in it, and the tray only renders Menu() and forwards
// clicks to Click. Collaborators come in through Deps, so tests drive the
// same App with a real DBus tray and the platform twins.
type App struct {
	cfg  Config
	deps Deps
	log  *slog.Logger

	mu        sync.Mutex
	st        State
	dlCancel  context.CancelFunc
	warmStop  context.CancelFunc
	warmTotal WarmResult
	holders   int
	release   func()
	quit      func()
	// armed is the download mode a second click starts without asking: set
	// when the question could only be asked in a notification.
	armed DownloadMode
	// problems holds each subsystem's latest unsolved problem; the status
	// line shows the newest (State.Problem).
	problems map[subsystem]problemEntry
	seq      int
	// kept are the settings saved on the web page (web.go).
	kept keptSettings

	srvMu sync.Mutex // serialises server start and stop

	changed chan struct{} // capacity 1: "the state changed", coalesced
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// New returns an App; Start brings it up.
func New(cfg Config, deps Deps, log *slog.Logger) *App {
	if log == nil {
		log = slog.Default()
	}
	a := &App{cfg: cfg, deps: deps, log: log, changed: make(chan struct{}, 1)}
	a.st.CanDownload = deps.Downloader != nil
	a.st.CanWarm = deps.Warmer != nil && deps.Idle != nil && deps.Power != nil
	a.st.CanServe = deps.Server != nil
	a.st.CanDraft = deps.Drafter != nil
	a.ctx, a.cancel = context.WithCancel(context.Background())
	if r, ok := deps.Server.(GenerationReporter); ok {
		r.ReportGenerations(a.Busy, a.AnswerFinished)
	}
	if r, ok := deps.Server.(QueueReporter); ok {
		a.watchQueue(r)
	}
	if r, ok := deps.Server.(PageReporter); ok {
		r.ServePage(a)
	}
	return a
}

// Start reads the install, the saved state and the login item, resumes
// overnight warming if it was on, and starts the server (on the demo model
// when nothing is installed). Problems are shown in the menu, not returned,
// except a state file that cannot be read.
func (a *App) Start(ctx context.Context) error {
	saved, err := loadState(a.cfg.DataDir)
	if err != nil {
		return err
	}
	a.mu.Lock()
	a.kept = saved.keptSettings
	a.mu.Unlock()
	if a.deps.Downloader != nil {
		inst, err := a.deps.Downloader.Installed(ctx)
		if err != nil {
			a.problem(subInstall, "Install unreadable", err)
		} else {
			a.solved(subInstall)
		}
		a.update(func(s *State) { s.Install = inst })
	}
	a.update(func(s *State) {
		s.Pending, s.Upgrade = saved.mode(), saved.Upgrade
		// A finished download whose state was not yet cleared (a crash
		// between the two) is not pending.
		if (s.Pending == ModeStream && s.Install.Mode != InstallNone) || (s.Pending == ModeFull && s.Install.Mode == InstallFull) {
			s.Pending, s.Upgrade = 0, false
		}
	})
	if a.deps.Drafter != nil {
		ok, err := a.deps.Drafter.DrafterInstalled()
		if err != nil {
			a.problem(subInstall, "Drafter unreadable", err)
		}
		a.update(func(s *State) { s.DrafterInstalled = ok })
	}
	if a.deps.Login != nil {
		on, err := a.deps.Login.Enabled()
		if err != nil {
			a.log.Warn("login item", "err", err)
		}
		a.update(func(s *State) { s.Login = on })
	}
	if saved.WarmEnabled {
		a.setWarm(true)
	}
	if a.deps.Server != nil {
		a.goWork(a.startServer)
	}
	return nil
}

// Close stops downloads (they stay resumable), warming and the server,
// waits for them, and closes the collaborators that are io.Closers (the
// model mirror).
func (a *App) Close(ctx context.Context) error {
	a.cancel()
	a.wg.Wait()
	var errs []error
	if a.deps.Server != nil && a.State().ServerAddr != "" {
		errs = append(errs, a.deps.Server.Stop(ctx))
	}
	closed := map[any]bool{}
	for _, c := range []any{a.deps.Server, a.deps.Warmer, a.deps.Downloader} {
		if c, ok := c.(io.Closer); ok && !closed[c] {
			closed[c] = true
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}

// SetQuit sets what the Quit entry does (the tray's quit).
func (a *App) SetQuit(quit func()) {
	a.mu.Lock()
	a.quit = quit
	a.mu.Unlock()
}

// State returns a snapshot.
func (a *App) State() State {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.st
}

// Menu renders the current state.
func (a *App) Menu() Menu { return BuildMenu(a.State()) }

// Changed receives a value after the state changed; changes in a burst
// coalesce, so a reader re-renders once.
func (a *App) Changed() <-chan struct{} { return a.changed }

func (a *App) update(f func(*State)) {
	a.mu.Lock()
	f(&a.st)
	a.mu.Unlock()
	select {
	case a.changed <- struct{}{}:
	default:
	}
}

// goWork runs f on a goroutine that Close waits for.
func (a *App) goWork(f func(ctx context.Context)) {
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		f(a.ctx)
	}()
}

// Click performs a menu entry's action. It returns at once: anything slow
// runs on its own goroutine.
func (a *App) Click(id ItemID) {
	st := a.State()
	switch id {
	case ItemDownloadStream:
		a.confirmDownload(ModeStream)
	case ItemDownloadFull:
		a.confirmDownload(ModeFull)
	case ItemUpgrade:
		a.startDownload(ModeFull, true)
	case ItemDrafter:
		a.startDrafterDownload()
	case ItemPause:
		a.togglePause()
	case ItemWarm:
		a.setWarm(!st.WarmEnabled)
	case ItemOpenWeb:
		if st.ServerAddr != "" && a.deps.Desktop != nil {
			a.goWork(func(ctx context.Context) {
				// The default browser: open on macOS, xdg-open on Linux.
				if err := a.deps.Desktop.Open(ctx, st.ServerAddr+"/"); err != nil {
					a.problem(subDesktop, "Open failed", err)
					return
				}
				a.solved(subDesktop)
			})
		}
	case ItemCopyAddress:
		if st.ServerAddr != "" && a.deps.Desktop != nil {
			a.goWork(func(ctx context.Context) {
				url := st.ServerAddr + "/v1" // the base URL an OpenAI client takes
				if err := a.deps.Desktop.CopyText(ctx, url); err != nil {
					a.problem(subDesktop, "Copy failed", err)
					return
				}
				a.solved(subDesktop)
				a.notify("API address copied", url)
			})
		}
	case ItemServer:
		if st.ServerAddr != "" {
			a.goWork(a.stopServer)
		} else {
			a.goWork(a.startServer)
		}
	case ItemDrives:
		a.goWork(a.chooseDrive)
	case ItemOpenData:
		if a.deps.Desktop != nil {
			a.goWork(func(ctx context.Context) {
				if err := os.MkdirAll(a.cfg.DataDir, 0o755); err != nil {
					a.problem(subDesktop, "Data folder", err)
					return
				}
				if err := a.deps.Desktop.Open(ctx, a.cfg.DataDir); err != nil {
					a.problem(subDesktop, "Open failed", err)
					return
				}
				a.solved(subDesktop)
			})
		}
	case ItemLogin:
		a.toggleLogin(!st.Login)
	case ItemQuit:
		a.mu.Lock()
		quit := a.quit
		a.mu.Unlock()
		if quit != nil {
			quit()
		}
	}
}

func (a *App) saveLocked() {
	s := savedState{Pending: modeName(a.st.Pending), Upgrade: a.st.Upgrade, WarmEnabled: a.st.WarmEnabled,
		ServerHost: a.cfg.Server.Host, ServerPort: a.cfg.Server.Port, keptSettings: a.kept}
	if err := saveState(a.cfg.DataDir, s); err != nil {
		a.log.Error("save state", "err", err)
	}
}

func (a *App) startDownload(mode DownloadMode, upgrade bool) {
	a.mu.Lock()
	if a.deps.Downloader == nil || a.st.Downloading || a.ctx.Err() != nil {
		a.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(a.ctx)
	a.dlCancel = cancel
	a.st.Downloading, a.st.Pending, a.st.Upgrade = true, mode, upgrade
	a.saveLocked()
	a.mu.Unlock()
	a.solved(subDownload) // a new attempt supersedes the last failure
	a.update(func(*State) {})
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer cancel()
		a.download(ctx, mode, upgrade)
	}()
}

func (a *App) togglePause() {
	a.mu.Lock()
	st, cancel := a.st, a.dlCancel
	a.mu.Unlock()
	switch {
	case st.Downloading && cancel != nil:
		cancel()
	case st.Pending != 0:
		a.startDownload(st.Pending, st.Upgrade)
	}
}

func (a *App) download(ctx context.Context, mode DownloadMode, upgrade bool) {
	release := a.hold("downloading the model")
	defer release()
	a.log.Info("download", "mode", mode, "upgrade", upgrade)
	err := a.deps.Downloader.Download(ctx, mode, func(p Progress) {
		a.update(func(s *State) { s.Download = p })
	})
	// Read the install even when quitting, with a context of its own.
	inst, ierr := a.deps.Downloader.Installed(context.WithoutCancel(ctx))
	paused := err != nil && ctx.Err() != nil
	a.mu.Lock()
	a.st.Downloading = false
	if ierr == nil {
		a.st.Install = inst
	}
	if err == nil {
		a.st.Pending, a.st.Upgrade, a.st.Download = 0, false, Progress{}
	}
	a.saveLocked()
	demo := a.st.Demo && a.st.ServerAddr != ""
	a.mu.Unlock()
	a.update(func(*State) {})
	switch {
	case err == nil:
		title, body := "Download finished", fmt.Sprintf("Kimi K3 is installed (%s mode).", mode)
		if upgrade {
			title, body = "Upgrade finished", "Every expert is on disk: Kimi K3 is a full install."
		}
		a.notify(title, body+pageLine(a.State().ServerAddr, "/model", "See"))
		if demo && a.ctx.Err() == nil {
			// Serve the real model instead of the demo.
			a.stopServer(a.ctx)
			a.startServer(a.ctx)
		}
	case paused:
		a.log.Info("download paused", "mode", mode)
	default:
		a.problem(subDownload, "Download failed", err)
	}
	if ierr != nil {
		a.log.Warn("install state", "err", ierr)
	}
}

// problem shows an error of sub that needs the user in the status line and
// as a notification, both cut to one short line (shortError); the whole
// error goes to the log. It stays until sub's next success (solved).
func (a *App) problem(sub subsystem, what string, err error) {
	a.log.Error(strings.ToLower(what), "err", err)
	short := shortError(err)
	a.mu.Lock()
	if a.problems == nil {
		a.problems = map[subsystem]problemEntry{}
	}
	a.seq++
	a.problems[sub] = problemEntry{text: what + ": " + short, whole: what + ": " + wholeError(err), seq: a.seq}
	a.mu.Unlock()
	a.update(a.showProblem)
	a.notify(what, short)
}

// solved clears sub's problem: the action that failed has since worked.
func (a *App) solved(sub subsystem) {
	a.mu.Lock()
	_, had := a.problems[sub]
	delete(a.problems, sub)
	a.mu.Unlock()
	if had {
		a.update(a.showProblem)
	}
}

// showProblem sets the status line's problem: the newest unsolved one.
// update calls it with a.mu held.
func (a *App) showProblem(s *State) {
	s.Problem, s.ProblemWhole = "", ""
	newest := 0
	for _, p := range a.problems {
		if p.seq > newest {
			s.Problem, s.ProblemWhole, newest = p.text, p.whole, p.seq
		}
	}
}

func (a *App) notify(title, body string) {
	if a.deps.Notifier == nil {
		return
	}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		// A broken notification daemon can hang the call (beeep#70);
		// notifications are not worth blocking shutdown for.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(a.ctx), 5*time.Second)
		defer cancel()
		if err := a.deps.Notifier.Notify(ctx, title, body); err != nil {
			a.log.Warn("notification", "title", title, "err", err)
		}
	}()
}

// AnswerFinished is called by the server and the CLI when a generation
// ends; answers that took longer than Config.NotifyAfter get a
// notification with their first words.
func (a *App) AnswerFinished(elapsed time.Duration, answer string) {
	if title, body, ok := longAnswer(a.live(), elapsed, answer); ok {
		a.notify(title, body+pageLine(a.State().ServerAddr, "/", "Read it at"))
	}
}

// NotifyLongAnswer is AnswerFinished for the CLI, which has no App: it
// notifies through n when the generation took longer than
// cfg.NotifyAfter.
func NotifyLongAnswer(ctx context.Context, cfg Config, n Notifier, elapsed time.Duration, answer string) error {
	title, body, ok := longAnswer(cfg, elapsed, answer)
	if !ok {
		return nil
	}
	return n.Notify(ctx, title, body)
}

func longAnswer(cfg Config, elapsed time.Duration, answer string) (title, body string, ok bool) {
	if cfg.NotifyAfter <= 0 || elapsed < cfg.NotifyAfter {
		return "", "", false
	}
	return "Answer finished after " + formatETA(elapsed), firstWords(answer, 12, 120), true
}

// firstWords returns up to n words and at most max bytes of s, with an
// ellipsis when it cut.
func firstWords(s string, n, max int) string {
	words := strings.Fields(s)
	cut := len(words) > n
	if cut {
		words = words[:n]
	}
	out := strings.Join(words, " ")
	if len(out) > max {
		out = strings.ToValidUTF8(out[:max], "")
		cut = true
	}
	if cut {
		out += "…"
	}
	return out
}

// Busy keeps the machine awake until the returned function is called; the
// server wraps each generation in it. Holders nest.
func (a *App) Busy(reason string) (done func()) { return a.hold(reason) }

func (a *App) hold(reason string) func() {
	a.mu.Lock()
	a.holders++
	if a.holders == 1 && a.deps.KeepAwake != nil {
		rel, err := a.deps.KeepAwake(context.WithoutCancel(a.ctx), reason)
		if err != nil {
			a.log.Warn("keep awake", "reason", reason, "err", err)
		} else {
			a.release = rel
		}
	}
	a.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			a.mu.Lock()
			defer a.mu.Unlock()
			a.holders--
			if a.holders == 0 && a.release != nil {
				a.release()
				a.release = nil
			}
		})
	}
}

func (a *App) startServer(ctx context.Context) {
	a.srvMu.Lock()
	defer a.srvMu.Unlock()
	if a.deps.Server == nil || a.State().ServerAddr != "" {
		return
	}
	demo := a.State().Install.Mode == InstallNone
	addr, err := a.deps.Server.Start(ctx, demo)
	if err != nil {
		if ctx.Err() == nil {
			a.problem(subServer, "Server failed to start", err)
		}
		return
	}
	a.solved(subServer)
	// A damaged job store was moved aside and salvaged as the server
	// started: the user hears it here, not only in the log.
	if r, ok := a.deps.Server.(interface{ StoreRecovered() error }); ok {
		if err := r.StoreRecovered(); err != nil {
			a.problem(subStore, "Job store damaged", err)
		}
	}
	a.log.Info("serving", "addr", addr, "demo", demo)
	a.update(func(s *State) { s.ServerAddr, s.Demo = addr, demo })
	if a.deps.Serving != nil {
		a.deps.Serving(addr)
	}
}

func (a *App) stopServer(ctx context.Context) {
	a.srvMu.Lock()
	defer a.srvMu.Unlock()
	if a.deps.Server == nil || a.State().ServerAddr == "" {
		return
	}
	err := a.deps.Server.Stop(context.WithoutCancel(ctx))
	a.update(func(s *State) { s.ServerAddr, s.Demo = "", false })
	if err != nil {
		a.problem(subServer, "Server stop", err)
		return
	}
	a.solved(subServer)
}

func (a *App) toggleLogin(on bool) {
	if a.deps.Login == nil {
		return
	}
	if err := a.deps.Login.SetEnabled(on); err != nil {
		a.problem(subLogin, "Launch at login", err)
		return
	}
	got, err := a.deps.Login.Enabled()
	if err != nil {
		a.problem(subLogin, "Launch at login", err)
		return
	}
	a.update(func(s *State) { s.Login = got })
	a.solved(subLogin)
}
