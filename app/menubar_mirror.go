package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/downloader"
	"github.com/deltafin/deltafin/internal/sysinfo"
)

// mirrorInstall is the menu's Downloader and Warmer over the downloader's
// Mirror. The app opens the mirror once: it holds the directory lock, and
// the engine reads (and fetches missing experts) through the same Mirror.
type mirrorInstall struct {
	cfg       Config
	headroom  int64 // free space every download leaves
	chunkSize int64 // 0: the downloader's default
	// log receives the verifier's disagreements (the app's log, with its
	// file); nil: the process's default.
	log *slog.Logger

	mu       sync.Mutex
	m        *downloader.Mirror
	progress func(Progress) // of the operation running now
}

func newMirrorInstall(cfg Config) *mirrorInstall {
	return &mirrorInstall{cfg: cfg, headroom: cfg.Headroom()}
}

func (d *mirrorInstall) mirror(ctx context.Context) (*downloader.Mirror, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		opts := downloader.Options{ChunkSize: d.chunkSize, Progress: d.event}
		if d.log != nil {
			opts.Disagreement = logDisagreement(d.log)
		}
		m, err := openMirror(ctx, d.cfg, opts)
		if err != nil {
			return nil, err
		}
		d.m = m
	}
	return d.m, nil
}

// dir is the mirror's directory, the installed model's.
func (d *mirrorInstall) dir() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m != nil {
		return d.m.Dir()
	}
	return d.cfg.ModelDir()
}

// Close releases the mirror (and its lock).
func (d *mirrorInstall) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		return nil
	}
	err := d.m.Close()
	d.m = nil
	return err
}

func (d *mirrorInstall) event(e downloader.Event) {
	d.mu.Lock()
	p := d.progress
	d.mu.Unlock()
	if p != nil && (e.Total > 0 || e.Phase == downloader.PhaseWaiting) {
		pr := Progress{Done: e.Done, Total: e.Total, Rate: e.Rate, ETA: e.ETA}
		if e.Phase == downloader.PhaseWaiting {
			pr.Waiting = e.Message
		}
		p(pr)
	}
}

func (d *mirrorInstall) follow(p func(Progress)) func() {
	d.mu.Lock()
	d.progress = p
	d.mu.Unlock()
	return func() {
		d.mu.Lock()
		d.progress = nil
		d.mu.Unlock()
	}
}

// planned reports whether setup has ever listed the repository: before
// that, reading the install would go to the network.
func (d *mirrorInstall) planned() bool {
	_, err := os.Stat(filepath.Join(d.cfg.ModelDir(), ".deltafin", "manifest.json"))
	return err == nil
}

func (d *mirrorInstall) Installed(ctx context.Context) (InstallState, error) {
	if !d.planned() {
		return InstallState{}, nil
	}
	m, err := d.mirror(ctx)
	if err != nil {
		return InstallState{}, err
	}
	p, err := m.Plan(ctx)
	if err != nil {
		return InstallState{}, err
	}
	return installState(m, p)
}

func installState(m *downloader.Mirror, p *downloader.Plan) (InstallState, error) {
	var in InstallState
	stream, err := m.Totals(p.Work(downloader.Stream))
	if err != nil {
		return in, err
	}
	full, err := m.Totals(p.Work(downloader.Full))
	if err != nil {
		return in, err
	}
	if in.ExpertsCached, in.ExpertsTotal, err = m.ExpertsCached(p); err != nil {
		return in, err
	}
	u, err := m.Unverified()
	if err != nil {
		return in, err
	}
	in.Unverified = u.Bytes > 0
	switch {
	case full.Missing() == 0:
		in.Mode = InstallFull
	case stream.Missing() == 0:
		in.Mode = InstallStream
		spine, err := m.Coverage(p.SpineWork())
		if err != nil {
			return in, err
		}
		if !spine.AllVerified() {
			in.Spine = "spine " + spine.String()
		}
	}
	return in, nil
}

func (d *mirrorInstall) Download(ctx context.Context, mode DownloadMode, progress func(Progress)) error {
	m, err := d.mirror(ctx)
	if err != nil {
		return err
	}
	defer d.follow(progress)()
	p, err := m.Plan(ctx)
	if err != nil {
		return err
	}
	want := downloader.Stream
	if mode == ModeFull {
		want = downloader.Full
	}
	// The setup's disk check: a refusal names the shortfall.
	chosen, err := chooseMode(m, p, want, d.headroom)
	if err != nil {
		return err
	}
	return m.Fetch(ctx, p, p.Work(chosen))
}

func (d *mirrorInstall) Estimate(ctx context.Context, mode DownloadMode) (Estimate, error) {
	m, err := d.mirror(ctx)
	if err != nil {
		return Estimate{}, err
	}
	p, err := m.Plan(ctx)
	if err != nil {
		return Estimate{}, err
	}
	want := downloader.Stream
	if mode == ModeFull {
		want = downloader.Full
	}
	// The setup's disk check first: a refusal names the shortfall before
	// anything is asked.
	if _, err := chooseMode(m, p, want, d.headroom); err != nil {
		return Estimate{}, err
	}
	t, err := m.Totals(p.Work(want))
	if err != nil {
		return Estimate{}, err
	}
	full, err := m.Totals(p.Work(downloader.Full))
	if err != nil {
		return Estimate{}, err
	}
	free, err := sysinfo.FreeDisk(m.Dir())
	if err != nil {
		return Estimate{}, fmt.Errorf("app: %w", err)
	}
	return Estimate{ToDownload: t.Missing(), Present: t.Present, Free: int64(free), KeepFree: KeptFree(d.headroom, full.Total)}, nil
}

// Warm fetches every missing byte, the experts the router traces and heat
// histogram rank highest first.
func (d *mirrorInstall) Warm(ctx context.Context, progress func(Progress)) (WarmResult, error) {
	var r WarmResult
	m, err := d.mirror(ctx)
	if err != nil {
		return r, err
	}
	defer d.follow(progress)()
	p, err := m.Plan(ctx)
	if err != nil {
		return r, err
	}
	before, err := installState(m, p)
	if err != nil {
		return r, err
	}
	full := p.Work(downloader.Full)
	beforeBytes, err := m.Totals(full)
	if err != nil {
		return r, err
	}
	work, err := d.ranked(m, p)
	if err != nil {
		return r, err
	}
	ferr := m.Fetch(ctx, p, append(work, full...))
	after, err := installState(m, p)
	if err != nil {
		return r, errors.Join(ferr, err)
	}
	afterBytes, err := m.Totals(full)
	if err != nil {
		return r, errors.Join(ferr, err)
	}
	r.Experts = after.ExpertsCached - before.ExpertsCached
	r.Bytes = afterBytes.Present - beforeBytes.Present
	return r, ferr
}

// ranked orders the missing experts by use, from the router traces and the
// heat histogram in the data directory; none: no order.
func (d *mirrorInstall) ranked(m *downloader.Mirror, p *downloader.Plan) ([]downloader.Work, error) {
	counts := map[checkpoint.ExpertID]float64{}
	traces, _ := filepath.Glob(filepath.Join(d.cfg.DataDir, "router_trace*.jsonl"))
	sort.Strings(traces)
	for _, name := range traces {
		if err := readInto(name, func(f *os.File) error { _, err := downloader.ReadTrace(f, name, counts); return err }); err != nil {
			return nil, err
		}
	}
	heat := filepath.Join(d.cfg.DataDir, "expert_heat.jsonl")
	if err := readInto(heat, func(f *os.File) error { return downloader.ReadHeat(f, heat, counts) }); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if len(counts) == 0 {
		return nil, nil
	}
	ranked, _, err := m.RankMissing(p, counts)
	if err != nil {
		return nil, err
	}
	work := make([]downloader.Work, len(ranked))
	for i, c := range ranked {
		work[i] = downloader.Work{File: c.File, Range: c.Range}
	}
	return work, nil
}

func readInto(name string, f func(*os.File) error) error {
	file, err := os.Open(name)
	if err != nil {
		return err
	}
	defer file.Close()
	if err := f(file); err != nil {
		return fmt.Errorf("app: %s: %w", name, err)
	}
	return nil
}

// DescribeInstall says in words what the data directory holds, for deltafin
// doctor: not installed, a stream install with its share of experts, or a
// full install. It reads only the local mirror.
func DescribeInstall(ctx context.Context, cfg Config) string {
	d := newMirrorInstall(cfg)
	defer d.Close()
	in, err := d.Installed(ctx)
	switch {
	case errors.Is(err, downloader.ErrBusy):
		return "in use by a running Deltafin (it holds the mirror)"
	case err != nil:
		return "unreadable: " + wholeError(err) // the whole advice: doctor is where it is read
	case in.Mode == InstallFull:
		return fmt.Sprintf("full install of %s in %s", cfg.Repo, cfg.ModelDir())
	case in.Mode == InstallStream:
		return fmt.Sprintf("stream install of %s, %d of %d experts on disk, in %s", cfg.Repo, in.ExpertsCached, in.ExpertsTotal, cfg.ModelDir())
	case d.planned():
		return "download started, not finished (deltafin setup continues it)"
	}
	return "not installed (the app serves the demo model; deltafin setup installs Kimi K3)"
}

// DescribeDesktop says whether the menu bar can show, for deltafin doctor:
// on Linux the session bus and whether a StatusNotifierItem host runs.
func DescribeDesktop(ctx context.Context, cfg Config) string {
	warning, err := checkDesktop(ctx, cfg)
	switch {
	case err != nil:
		return wholeError(err) // the whole advice: doctor is where it is read
	case warning != "":
		return warning
	}
	return desktopReady(cfg)
}
