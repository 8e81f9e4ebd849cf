package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/drives"
	"github.com/deltafin/deltafin/experts"
)

// ErrDrive reports a bad expert-drive request (a share out of range, a
// path not added).
var ErrDrive = errors.New("app: expert drive")

// DriveEntry is one expert drive the user added (deltafin drives add, the
// menu): a directory on another disk and the share of the model's experts
// it should hold, hottest first.
type DriveEntry struct {
	Path  string  `json:"path"`
	Share float64 `json:"share"` // 0 < Share ≤ 1
}

// ExpertDrives lists the drives added, in the order added.
func ExpertDrives(cfg Config) ([]DriveEntry, error) {
	s, err := loadState(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	return s.Drives, nil
}

// AddExpertDrive remembers e (its path made absolute), replacing an entry
// for the same path, and returns the entry as stored.
func AddExpertDrive(cfg Config, e DriveEntry) (DriveEntry, error) {
	if !(e.Share > 0 && e.Share <= 1) {
		return e, fmt.Errorf("%w: share %v, want more than 0%% and at most 100%%", ErrDrive, e.Share)
	}
	abs, err := filepath.Abs(e.Path)
	if err != nil {
		return e, fmt.Errorf("%w: %v", ErrDrive, err)
	}
	e.Path = abs
	s, err := loadState(cfg.DataDir)
	if err != nil {
		return e, err
	}
	s.Drives = slices.DeleteFunc(s.Drives, func(d DriveEntry) bool { return d.Path == abs })
	s.Drives = append(s.Drives, e)
	return e, saveState(cfg.DataDir, s)
}

// RemoveExpertDrive forgets the drive at path and returns its entry; the
// copies on it are the caller's to delete (drives.Remove).
func RemoveExpertDrive(cfg Config, path string) (DriveEntry, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return DriveEntry{}, fmt.Errorf("%w: %v", ErrDrive, err)
	}
	s, err := loadState(cfg.DataDir)
	if err != nil {
		return DriveEntry{}, err
	}
	i := slices.IndexFunc(s.Drives, func(d DriveEntry) bool { return d.Path == abs })
	if i < 0 {
		return DriveEntry{}, fmt.Errorf("%w: %s was not added (deltafin drives list)", ErrDrive, abs)
	}
	e := s.Drives[i]
	s.Drives = slices.Delete(s.Drives, i, i+1)
	return e, saveState(cfg.DataDir, s)
}

// openDrives opens the added drives for a model whose routed experts are
// spans (the engine's own index parse: StreamOptions.OpenDrives), skipping
// (with a warning to log) those that cannot be opened now: a drive that is
// not plugged in only costs its bandwidth. The engine calls it only for a
// model that streams MXFP4 experts, so a failure to list them is the
// open's error and never a reason to ignore the drives.
func openDrives(cfg Config, spans map[ckpt.ExpertID]ckpt.ExpertSpan, log *slog.Logger) ([]*drives.Drive, error) {
	entries, err := ExpertDrives(cfg)
	if err != nil || len(entries) == 0 {
		return nil, err
	}
	layout := drives.Layout(spans)
	var out []*drives.Drive
	for _, e := range entries {
		d, err := drives.Open(e.Path, layout)
		if err != nil {
			log.Warn("expert drive skipped", "path", e.Path, "err", err)
			continue
		}
		if d.Info().Experts == 0 {
			d.Close()
			continue
		}
		out = append(out, d)
	}
	return out, nil
}

// Close closes the model, then its expert drives.
func (m *Model) Close() error {
	if m.stopWatch != nil {
		m.stopWatch()
	}
	err := m.Model.Close()
	for _, d := range m.drives {
		if derr := d.Close(); err == nil {
			err = derr
		}
	}
	if m.folderMirror != nil {
		if derr := m.folderMirror.Close(); err == nil {
			err = derr
		}
	}
	return err
}

// DriveMirror opens what expert drives copy from: the model directory
// given, else the installed mirror (a stream install's missing bytes are
// fetched and verified by the downloader first). The caller calls done.
func DriveMirror(ctx context.Context, cfg Config, model string) (m drives.Mirror, done func(), err error) {
	if model != "" {
		m, err := drives.OpenMirror(ctx, model, nil)
		return m, func() {}, err
	}
	mm, err := OpenInstalled(ctx, cfg)
	if err != nil {
		return drives.Mirror{}, nil, err
	}
	if m, err = drives.OpenMirror(ctx, mm.Dir(), MirrorSource(mm)); err != nil {
		mm.Close()
		return drives.Mirror{}, nil, err
	}
	return m, func() { mm.Close() }, nil
}

// DriveProgress reports a drive being filled: the probe's pick, then each
// recorded batch of copies.
type DriveProgress struct {
	Probe    func(drives.ProbeResult)
	Progress func(done, total int, bytes int64)
}

// FillDrive adds e (refusing the mirror's own device unless force),
// probes its reads in flight with a probe file of probeBytes, and copies
// the hottest experts of m to it (the expert heat histogram of the data
// directory ranks them). It returns the entry as stored.
func FillDrive(ctx context.Context, cfg Config, m drives.Mirror, e DriveEntry, force bool, probeBytes int64, p DriveProgress) (_ DriveEntry, _ drives.FillResult, err error) {
	if !force {
		if err := drives.CheckDevice(e.Path, m.Dir); err != nil {
			return e, drives.FillResult{}, err
		}
	}
	before, err := ExpertDrives(cfg)
	if err != nil {
		return e, drives.FillResult{}, err
	}
	e, err = AddExpertDrive(cfg, e)
	if err != nil {
		return e, drives.FillResult{}, err
	}
	// A new drive whose add fails (a full disk, a device error) is not
	// left listed, nor its partial copies on it; an interrupted add is
	// kept, to resume.
	added := !slices.ContainsFunc(before, func(b DriveEntry) bool { return b.Path == e.Path })
	defer func() {
		if err == nil || !added || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return
		}
		if _, rerr := RemoveExpertDrive(cfg, e.Path); rerr != nil {
			err = errors.Join(err, rerr)
		} else if rerr := drives.Remove(e.Path); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}()
	d, err := drives.Open(e.Path, drives.Layout(m.Spans))
	if err != nil {
		return e, drives.FillResult{}, err
	}
	defer d.Close()
	pr, err := d.Probe(ctx, probeBytes)
	if err != nil {
		return e, drives.FillResult{}, err
	}
	if p.Probe != nil {
		p.Probe(pr)
	}
	heat, err := experts.HeatScores(filepath.Join(cfg.DataDir, heatFile), m.Spans)
	if err != nil {
		heat = nil // a damaged histogram only costs the ranking
	}
	res, err := d.Fill(ctx, m, drives.FillOptions{Share: e.Share, Heat: heat, Progress: p.Progress})
	return e, res, err
}

// heatFile is the expert heat histogram's name in the data directory.
const heatFile = "expert_heat.jsonl"
