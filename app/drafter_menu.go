package app

import (
	"context"

	"github.com/deltafin/deltafin/downloader"
)

// The menu's "Download the drafter": the same install as setup --drafter
// (InstallDrafter), run by the app with its progress in the entry. Once
// it is in, a running server is restarted so that it drafts with it.

// drafterInstall is the app's DrafterInstaller over InstallDrafter.
type drafterInstall struct {
	cfg       Config
	chunkSize int64 // 0: the downloader's default
}

func (d *drafterInstall) DrafterInstalled() (bool, error) {
	dir, err := InstalledDrafter(d.cfg)
	return dir != "", err
}

func (d *drafterInstall) InstallDrafter(ctx context.Context, progress func(Progress)) error {
	_, err := InstallDrafter(ctx, d.cfg, downloader.Options{ChunkSize: d.chunkSize, Progress: func(e downloader.Event) {
		if e.Total > 0 {
			progress(Progress{Done: e.Done, Total: e.Total, Rate: e.Rate, ETA: e.ETA})
		}
	}})
	return err
}

// startDrafterDownload starts the drafter's install unless it runs or is
// done.
func (a *App) startDrafterDownload() {
	a.mu.Lock()
	if a.deps.Drafter == nil || a.st.DrafterDownloading || a.st.DrafterInstalled || a.ctx.Err() != nil {
		a.mu.Unlock()
		return
	}
	a.st.DrafterDownloading = true
	a.mu.Unlock()
	a.update(func(*State) {})
	a.goWork(a.downloadDrafter)
}

func (a *App) downloadDrafter(ctx context.Context) {
	release := a.hold("downloading the drafter")
	defer release()
	a.log.Info("download the drafter", "repo", a.cfg.DrafterRepo)
	err := a.deps.Drafter.InstallDrafter(ctx, func(p Progress) {
		a.update(func(s *State) { s.Drafter = p })
	})
	a.update(func(s *State) {
		s.DrafterDownloading = false
		s.DrafterInstalled = err == nil
	})
	switch {
	case err == nil:
		a.solved(subDownload)
		a.notify("Drafter installed", "Kimi K3 now drafts with it: the same answers in fewer passes.")
		if a.State().ServerAddr != "" && !a.State().Demo && a.ctx.Err() == nil {
			a.stopServer(a.ctx)
			a.startServer(a.ctx)
		}
	case ctx.Err() != nil:
		a.log.Info("drafter download stopped; it continues from where it stopped next time")
	default:
		a.problem(subDownload, "Drafter download failed", err)
	}
}
