package app

import (
	"context"
	"errors"
	"fmt"
)

// confirmDownload asks before a download with the disk check's figures: in
// a dialog where the desktop has one, else in a notification that says a
// second click starts it. While the repository is listed the status says
// "Connecting to the hub…".
func (a *App) confirmDownload(mode DownloadMode) {
	a.mu.Lock()
	armed := a.armed == mode
	a.armed = 0
	busy := a.st.Downloading || a.st.Connecting || a.deps.Downloader == nil
	if !busy && !armed {
		a.st.Connecting = true
	}
	a.mu.Unlock()
	switch {
	case busy:
		return
	case armed:
		a.startDownload(mode, false)
		return
	}
	a.update(func(*State) {})
	a.goWork(func(ctx context.Context) {
		est, err := a.estimate(ctx, mode)
		a.update(func(s *State) { s.Connecting = false })
		if err != nil {
			if ctx.Err() == nil {
				a.problem(subDownload, "Download failed", err)
			}
			return
		}
		a.solved(subDownload)
		title := "Download Kimi K3 (" + mode.String() + ")?"
		text := estimateText(mode, est)
		ok := false
		if a.deps.Desktop != nil {
			ok, err = a.deps.Desktop.Confirm(ctx, title, text, "Download")
		} else {
			err = ErrNoDialog
		}
		switch {
		case errors.Is(err, ErrNoDialog):
			a.mu.Lock()
			a.armed = mode
			a.mu.Unlock()
			label := LabelDownloadStream
			if mode == ModeFull {
				label = LabelDownloadFull
			}
			a.notify(title, text+" Click "+label+" again to start.")
		case err != nil:
			a.problem(subDesktop, "Download dialog", err)
		case ok:
			a.startDownload(mode, false)
		}
	})
}

func (a *App) estimate(ctx context.Context, mode DownloadMode) (Estimate, error) {
	// The check lists the repository: a hub that accepts the connection
	// and never answers fails with a clear message instead of "Connecting"
	// forever.
	ctx, cancel := context.WithTimeout(ctx, a.cfg.HubStall)
	defer cancel()
	est, err := a.deps.Downloader.Estimate(ctx, mode)
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
		return est, fmt.Errorf("app: the hub at %s did not answer in %v (check the network, or set HF_ENDPOINT): %w",
			a.cfg.HFEndpoint, a.cfg.HubStall, err)
	}
	return est, err
}

// estimateText is the confirmation's body.
func estimateText(mode DownloadMode, e Estimate) string {
	what := "the spine now (the experts come on demand)"
	if mode == ModeFull {
		what = "every weight"
	}
	s := fmt.Sprintf("Kimi K3 in %s mode: %s, %s to download", mode, what, FormatBytes(uint64(max(e.ToDownload, 0))))
	if e.Present > 0 {
		s += fmt.Sprintf(" (%s already here)", FormatBytes(uint64(e.Present)))
	}
	return s + fmt.Sprintf(". Free disk: %s; %s stay free afterwards.", FormatBytes(uint64(max(e.Free, 0))), FormatBytes(uint64(max(e.KeepFree, 0))))
}
