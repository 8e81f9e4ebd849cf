package app

import (
	"context"
	"time"
)

// The menu-bar app drives the rest of Deltafin through these interfaces, so
// the downloader, the server and the engine plug in without the app knowing
// their types, and the platform seams (idle time, power, keep-awake, login
// item, desktop) have one portable shape with a file per OS behind it.

// Downloader installs the model into the data directory.
type Downloader interface {
	// Installed reports what is on disk now.
	Installed(ctx context.Context) (InstallState, error)
	// Download fetches what mode needs, reusing what is on disk, and calls
	// progress as bytes arrive. It returns nil when the install is
	// complete, the context's error when paused (cancelled), or an error
	// that names the problem (the disk shortfall, a token needed).
	// ModeFull on a stream install is the upgrade.
	Download(ctx context.Context, mode DownloadMode, progress func(Progress)) error
	// Estimate is the disk check of a download in mode, before it starts:
	// it lists the repository (network), so the caller bounds it in time.
	Estimate(ctx context.Context, mode DownloadMode) (Estimate, error)
}

// Estimate is what a download would take and leave: the figures the
// confirmation shows.
type Estimate struct {
	ToDownload, Present int64 // bytes
	Free, KeepFree      int64 // free disk now, and what must stay free
}

// WarmResult counts what one warming run fetched.
type WarmResult struct {
	Experts int
	Bytes   int64
}

// Warmer fetches missing experts, most used first.
type Warmer interface {
	// Warm runs until every expert is present (nil error) or ctx is
	// cancelled (ctx's error); either way the result counts what this run
	// fetched, so the app can add up runs interrupted by user activity.
	Warm(ctx context.Context, progress func(Progress)) (WarmResult, error)
}

// Server is the embedded OpenAI-compatible server.
type Server interface {
	// Start serves the installed model, or the built-in demo model when
	// demo is set, and returns the base URL.
	Start(ctx context.Context, demo bool) (addr string, err error)
	// Stop stops serving; in-flight requests are cancelled.
	Stop(ctx context.Context) error
}

// GenerationReporter is implemented by a Server that can tell the App about
// its generations: New hands it the App's keep-awake (busy, held while one
// runs) and its long-answer notification (finished).
type GenerationReporter interface {
	ReportGenerations(busy func(reason string) (done func()), finished func(elapsed time.Duration, answer string))
}

// Notifier shows a desktop notification.
type Notifier interface {
	Notify(ctx context.Context, title, body string) error
}

// IdleSource reports how long the user has not touched the machine.
type IdleSource interface {
	IdleTime(ctx context.Context) (time.Duration, error)
}

// PowerSource reports whether the machine runs on mains power.
type PowerSource interface {
	OnAC(ctx context.Context) (bool, error)
}

// LoginItem is the "Launch at login" switch.
type LoginItem interface {
	Enabled() (bool, error)
	SetEnabled(on bool) error
}

// Desktop is what the app asks of the desktop session.
type Desktop interface {
	CopyText(ctx context.Context, text string) error
	Open(ctx context.Context, path string) error
	// Confirm asks the user a yes/no question in a dialog and reports the
	// answer; ErrNoDialog when this desktop has no dialog tool.
	Confirm(ctx context.Context, title, text, ok string) (bool, error)
}

// KeepAwake holds off idle sleep (and, on macOS, App Nap) until release is
// called.
type KeepAwake func(ctx context.Context, reason string) (release func(), err error)

// Deps are the App's collaborators. A nil Downloader, Warmer or Server
// disables the menu entries that need it.
type Deps struct {
	Downloader Downloader
	// Drafter installs the drafter (the menu's "Download the drafter").
	Drafter   DrafterInstaller
	Warmer    Warmer
	Server    Server
	Notifier  Notifier
	Idle      IdleSource
	Power     PowerSource
	Login     LoginItem
	Desktop   Desktop
	KeepAwake KeepAwake
	// Serving, when set, is told the server's base URL each time it starts
	// (the instance lock records it for a second instance's message).
	Serving func(baseURL string)
}

// DrafterInstaller is the drafter's install (drafter.go) as the menu sees it.
type DrafterInstaller interface {
	// DrafterInstalled reports whether a complete drafter is recorded.
	DrafterInstalled() (bool, error)
	// InstallDrafter downloads it whole (resumable, verified), calling
	// progress as bytes arrive.
	InstallDrafter(ctx context.Context, progress func(Progress)) error
}
