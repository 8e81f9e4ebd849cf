package app

import (
	"context"
	"fmt"

	"github.com/deltafin/deltafin/downloader"
	"github.com/deltafin/deltafin/internal/sysinfo"
)

// Install is a setup running in the background, for the menu bar: progress
// arrives as events, Pause and Resume control it, and a full disk pauses it
// (an event with PhasePaused and ErrDiskFull) until Resume.
type Install struct {
	Mode downloader.Mode // the mode chosen
	m    *downloader.Mirror
	done chan struct{}
	err  error
}

// InstallOptions configure StartInstall.
type InstallOptions struct {
	Mode      downloader.Mode // Auto, Stream or Full
	Progress  func(downloader.Event)
	Headroom  int64 // free space kept (0: 100 GB)
	ChunkSize int64 // 0: 64 MiB
}

// StartInstall plans the install, chooses the mode as deltafin setup does
// (refusing with the shortfall when nothing fits), and starts the transfer.
func StartInstall(ctx context.Context, cfg Config, opts InstallOptions) (*Install, error) {
	m, err := openMirror(ctx, cfg, downloader.Options{ChunkSize: opts.ChunkSize, Progress: opts.Progress, WaitOnDiskFull: true})
	if err != nil {
		return nil, err
	}
	p, err := m.Plan(ctx)
	var mode downloader.Mode
	if err == nil {
		mode, err = chooseMode(m, p, opts.Mode, opts.Headroom)
	}
	if err != nil {
		m.Close()
		return nil, err
	}
	in := &Install{Mode: mode, m: m, done: make(chan struct{})}
	go func() {
		defer close(in.done)
		in.err = m.Fetch(ctx, p, p.Work(mode))
		if cerr := m.Close(); in.err == nil {
			in.err = cerr
		}
	}()
	return in, nil
}

func chooseMode(m *downloader.Mirror, p *downloader.Plan, mode downloader.Mode, headroom int64) (downloader.Mode, error) {
	headroom = orDefaultHeadroom(headroom)
	stream, err := m.Totals(p.Work(downloader.Stream))
	if err != nil {
		return "", err
	}
	full, err := m.Totals(p.Work(downloader.Full))
	if err != nil {
		return "", err
	}
	free, err := sysinfo.FreeDisk(m.Dir())
	if err != nil {
		return "", fmt.Errorf("app: %w", err)
	}
	return downloader.Choose(mode, stream, full, int64(free), headroom)
}

// Pause stops the transfer after cancelling the requests in flight; nothing
// written is lost.
func (in *Install) Pause() { in.m.Pause() }

// Resume continues after Pause or a full disk.
func (in *Install) Resume() { in.m.Resume() }

// Paused reports whether the install is paused.
func (in *Install) Paused() bool { return in.m.Paused() }

// Done is closed when the install has ended; Wait then returns its error.
func (in *Install) Done() <-chan struct{} { return in.done }

// Wait waits for the end of the install and returns its error.
func (in *Install) Wait() error {
	<-in.done
	return in.err
}
