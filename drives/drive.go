package drives

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/experts"
	"github.com/deltafin/deltafin/internal/directio"
)

// Mirror is where copies come from: the checkpoint's directory, how its
// files are opened (app.MirrorSource for the downloader's mirror,
// ckpt.OpenFile for a plain directory) and its experts.
type Mirror struct {
	Dir   string
	Open  ckpt.OpenSource
	Spans map[ckpt.ExpertID]ckpt.ExpertSpan
}

// OpenMirror lists dir's experts (experts.Spans); open nil means
// ckpt.OpenFile.
func OpenMirror(ctx context.Context, dir string, open ckpt.OpenSource) (Mirror, error) {
	if open == nil {
		open = ckpt.OpenFile
	}
	spans, err := experts.Spans(ctx, dir, open)
	if err != nil {
		return Mirror{}, err
	}
	return Mirror{Dir: dir, Open: open, Spans: spans}, nil
}

// Drive is one expert drive: an experts.Drive over the copies its
// manifest names. Safe for concurrent use; Fill, Repair and Scrub may run
// while the engine reads from it.
type Drive struct {
	path   string // as the user gave it
	dir    string // path/deltafin-experts
	layout string

	// saveMu orders manifest saves (taken before mu): a save writes the
	// manifest outside mu, so the engine's lookups never wait for a disk
	// write.
	saveMu sync.Mutex
	mu     sync.RWMutex
	man    manifest
	held   map[ckpt.ExpertID]record // the good copies
	file   *directio.File           // experts.bin; nil while nothing is copied
	err    error                    // the last failure to record a Corrupt
}

var _ experts.Drive = (*Drive)(nil)

// Open opens the drive at path for a checkpoint of layout (Layout). A path
// without copies, or with copies of another layout, gives a drive that
// holds nothing (Fill starts it afresh).
func Open(path, layout string) (*Drive, error) {
	d := &Drive{path: path, dir: filepath.Join(path, Sub), layout: layout, held: map[ckpt.ExpertID]record{}}
	m, err := loadManifest(d.dir)
	if err != nil {
		return nil, err
	}
	if m.Layout != layout {
		m = manifest{Version: version, Layout: layout, Readers: m.Readers, GBps: m.GBps}
	}
	d.man = m
	for _, r := range m.Experts {
		if !r.Bad {
			d.held[r.id()] = r
		}
	}
	if len(m.Experts) > 0 {
		if d.file, err = directio.OpenFile(filepath.Join(d.dir, dataName)); err != nil {
			return nil, fmt.Errorf("drives: %s: %w", path, err)
		}
	}
	return d, nil
}

// Name is the path the drive was added with.
func (d *Drive) Name() string { return d.path }

// Readers is the reads in flight the probe chose (0 before a probe).
func (d *Drive) Readers() int {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.man.Readers
}

// Replica says where id's copy lies.
func (d *Drive) Replica(id ckpt.ExpertID) (experts.Replica, bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	r, ok := d.held[id]
	if !ok || d.file == nil {
		return experts.Replica{}, false
	}
	return experts.Replica{Source: d.file, Offset: r.Slot, CRC32C: r.CRC}, true
}

// Corrupt stops offering id's copy and marks it for Repair in the
// manifest.
func (d *Drive) Corrupt(id ckpt.ExpertID) {
	d.saveMu.Lock()
	defer d.saveMu.Unlock()
	d.mu.Lock()
	delete(d.held, id)
	m := d.man
	m.Experts = slices.Clone(m.Experts)
	for i := range m.Experts {
		if m.Experts[i].id() == id {
			m.Experts[i].Bad = true
		}
	}
	d.man = m
	d.mu.Unlock()
	if err := m.save(d.dir); err != nil {
		d.mu.Lock()
		d.err = err
		d.mu.Unlock()
	}
}

// Info is what `drives list` shows of a drive.
type Info struct {
	Path    string
	Experts int   // good copies
	Bad     int   // copies waiting for Repair
	Bytes   int64 // of the good copies
	Readers int
	GBps    float64
}

// Info describes the drive now.
func (d *Drive) Info() Info {
	d.mu.RLock()
	defer d.mu.RUnlock()
	in := Info{Path: d.path, Experts: len(d.held), Readers: d.man.Readers, GBps: d.man.GBps}
	for _, r := range d.man.Experts {
		if r.Bad {
			in.Bad++
		} else {
			in.Bytes += r.Len
		}
	}
	return in
}

// Stat describes the drive at path from its manifest alone, whatever
// checkpoint its copies are of (drives list).
func Stat(path string) (Info, error) {
	m, err := loadManifest(filepath.Join(path, Sub))
	if err != nil {
		return Info{}, err
	}
	d := &Drive{path: path, man: m, held: map[ckpt.ExpertID]record{}}
	for _, r := range m.Experts {
		if !r.Bad {
			d.held[r.id()] = r
		}
	}
	return d.Info(), nil
}

// Close closes the copies' file; later reads from it fail (and the engine
// reads from the other drives). It returns the last failure to record a
// Corrupt, if any.
func (d *Drive) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var err error
	if d.file != nil {
		err = d.file.Close()
		d.file = nil
	}
	if d.err != nil {
		return d.err
	}
	return err
}

// Remove deletes the drive's copies (path/deltafin-experts); the path
// itself and anything else in it stay.
func Remove(path string) error {
	dir := filepath.Join(path, Sub)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("drives: remove %s: %w", dir, err)
	}
	return nil
}
