package drives

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/experts"
	"github.com/deltafin/deltafin/internal/directio"
	"github.com/deltafin/deltafin/internal/sysinfo"
)

// ErrSameDevice refuses a drive on the device that holds the mirror: its
// reads would share the mirror's bandwidth and add nothing.
var ErrSameDevice = errors.New("drives: on the same device as the mirror")

// ErrCopy reports a copy that did not read back as written.
var ErrCopy = errors.New("drives: copy does not read back")

// batch is how many copies are fsynced, read back and recorded together.
const batch = 16

// FillOptions configures Fill.
type FillOptions struct {
	// Share is the fraction of the model's experts the drive should hold,
	// hottest first (0 < Share ≤ 1).
	Share float64
	// Heat ranks the experts (experts.HeatScores); experts without heat
	// follow in layer and expert order.
	Heat map[ckpt.ExpertID]float32
	// Reserve is the free space Fill leaves on the drive (default 2 GB).
	Reserve int64
	// Progress, when set, is called after each recorded batch.
	Progress func(done, total int, bytes int64)
}

// FillResult says what Fill did.
type FillResult struct {
	Copied int   // experts copied this time
	Bytes  int64 // bytes written this time
	Held   int   // good copies on the drive now
	Wanted int   // copies the share asks for
	Full   bool  // stopped early: the drive's free space reached the reserve
}

// CheckDevice refuses path when it lies on the device holding mirrorDir
// (ErrSameDevice), comparing st_dev; path need not exist yet (its nearest
// existing parent is compared).
func CheckDevice(path, mirrorDir string) error {
	a, err := device(path)
	if err != nil {
		return err
	}
	b, err := device(mirrorDir)
	if err != nil {
		return err
	}
	if a == b {
		return fmt.Errorf("%w: %s and the mirror %s are both on device %d (pass --force to use it anyway)", ErrSameDevice, path, mirrorDir, a)
	}
	return nil
}

func device(path string) (uint64, error) {
	p, err := filepath.Abs(path)
	if err != nil {
		return 0, fmt.Errorf("drives: %w", err)
	}
	for {
		st, err := os.Stat(p)
		if err == nil {
			sys, ok := st.Sys().(*syscall.Stat_t)
			if !ok {
				return 0, fmt.Errorf("drives: no device number for %s on this system", p)
			}
			return uint64(sys.Dev), nil
		}
		parent := filepath.Dir(p)
		if parent == p {
			return 0, fmt.Errorf("drives: %w", err)
		}
		p = parent
	}
}

// Rank orders spans' experts hottest first by heat, then by layer and
// expert.
func Rank(spans map[ckpt.ExpertID]ckpt.ExpertSpan, heat map[ckpt.ExpertID]float32) []ckpt.ExpertID {
	ids := make([]ckpt.ExpertID, 0, len(spans))
	for id := range spans {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b ckpt.ExpertID) int {
		if c := cmp.Compare(heat[b], heat[a]); c != 0 {
			return c
		}
		return a.Compare(b)
	})
	return ids
}

// Fill copies experts from m until the drive holds the share asked for,
// hottest first, or its free space reaches the reserve. Each batch of
// copies is fsynced, read back from the device and checked against the
// CRC-32C of the mirror's bytes, then recorded in the manifest (replaced
// atomically), so an interrupted Fill resumes after the last recorded
// batch. Copies marked bad are copied again in place. The copies become
// readable by the engine as they are recorded.
func (d *Drive) Fill(ctx context.Context, m Mirror, o FillOptions) (FillResult, error) {
	if !(o.Share > 0 && o.Share <= 1) {
		return FillResult{}, fmt.Errorf("drives: share %v, want more than 0 and at most 1", o.Share)
	}
	if o.Reserve <= 0 {
		o.Reserve = 2e9
	}
	if Layout(m.Spans) != d.layout {
		return FillResult{}, fmt.Errorf("drives: %s was opened for another checkpoint layout", d.path)
	}
	ids := Rank(m.Spans, o.Heat)
	want := ids[:int(math.Ceil(o.Share*float64(len(ids))))]
	res := FillResult{Wanted: len(want)}
	c, err := d.startCopy(m)
	if err != nil {
		return res, err
	}
	defer c.close()
	var todo []ckpt.ExpertID
	for _, id := range want {
		if !d.holds(id) {
			todo = append(todo, id)
		}
	}
	for start := 0; start < len(todo); start += batch {
		ids := todo[start:min(start+batch, len(todo))]
		free, err := sysinfo.FreeDisk(d.dir)
		if err != nil {
			return res, err
		}
		var need int64
		for _, id := range ids {
			lo, hi := experts.ReplicaRange(m.Spans[id])
			need += alignUp(hi - lo)
		}
		if int64(free) < need+o.Reserve {
			res.Full = true
			break
		}
		n, err := c.copyBatch(ctx, ids)
		if err != nil {
			return res, err
		}
		res.Copied += len(ids)
		res.Bytes += n
		if o.Progress != nil {
			o.Progress(start+len(ids), len(todo), res.Bytes)
		}
	}
	res.Held = d.Info().Experts
	return res, nil
}

// Repair copies again every copy marked bad (by Corrupt or Scrub), in
// place, and returns how many it repaired.
func (d *Drive) Repair(ctx context.Context, m Mirror) (int, error) {
	d.mu.RLock()
	var bad []ckpt.ExpertID
	for _, r := range d.man.Experts {
		if r.Bad {
			bad = append(bad, r.id())
		}
	}
	d.mu.RUnlock()
	if len(bad) == 0 {
		return 0, nil
	}
	c, err := d.startCopy(m)
	if err != nil {
		return 0, err
	}
	defer c.close()
	for start := 0; start < len(bad); start += batch {
		if _, err := c.copyBatch(ctx, bad[start:min(start+batch, len(bad))]); err != nil {
			return start, err
		}
	}
	return len(bad), nil
}

// Scrub reads every good copy back from the device, marks those whose
// bytes fail their checksum bad and repairs them from m. It returns the
// number checked and the number repaired.
func (d *Drive) Scrub(ctx context.Context, m Mirror) (checked, repaired int, err error) {
	d.mu.RLock()
	recs := make([]record, 0, len(d.held))
	for _, r := range d.held {
		recs = append(recs, r)
	}
	f := d.file
	d.mu.RUnlock()
	slices.SortFunc(recs, func(a, b record) int { return cmp.Compare(a.Slot, b.Slot) })
	for _, r := range recs {
		if err := ctx.Err(); err != nil {
			return checked, 0, err
		}
		ok, err := checkCopy(ctx, f, r, m.Spans[r.id()])
		if err != nil {
			return checked, 0, err
		}
		checked++
		if !ok {
			d.Corrupt(r.id())
		}
	}
	repaired, err = d.Repair(ctx, m)
	return checked, repaired, err
}

// checkCopy reads r's copy from the device and compares its span's
// checksum.
func checkCopy(ctx context.Context, f *directio.File, r record, sp ckpt.ExpertSpan) (bool, error) {
	buf := directio.Buffer(int(alignUp(r.Len)))
	if err := f.ReadAt(ctx, buf, r.Slot); err != nil {
		return false, fmt.Errorf("drives: read back %s: %w", r.id(), err)
	}
	lo, _ := experts.ReplicaRange(sp)
	return experts.SpanCRC(buf[sp.Offset-lo:sp.Offset-lo+sp.Size]) == r.CRC, nil
}

func (d *Drive) holds(id ckpt.ExpertID) bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	_, ok := d.held[id]
	return ok
}

// copier writes copies into experts.bin.
type copier struct {
	d       *Drive
	m       Mirror
	w       *os.File
	sources map[string]ckpt.Source
}

func (d *Drive) startCopy(m Mirror) (*copier, error) {
	if err := os.MkdirAll(d.dir, 0o755); err != nil {
		return nil, fmt.Errorf("drives: %w", err)
	}
	w, err := os.OpenFile(filepath.Join(d.dir, dataName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("drives: %w", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.file == nil {
		if d.file, err = directio.OpenFile(w.Name()); err != nil {
			w.Close()
			return nil, fmt.Errorf("drives: %w", err)
		}
	}
	return &copier{d: d, m: m, w: w, sources: map[string]ckpt.Source{}}, nil
}

func (c *copier) close() {
	c.w.Close()
	for _, s := range c.sources {
		if cl, ok := s.(interface{ Close() error }); ok {
			cl.Close()
		}
	}
}

// copyBatch copies ids (new ones after the last slot, bad ones in their
// slot), fsyncs, reads each back and checks it, then records them.
func (c *copier) copyBatch(ctx context.Context, ids []ckpt.ExpertID) (int64, error) {
	d := c.d
	d.mu.RLock()
	next := d.man.end()
	slots := map[ckpt.ExpertID]int64{}
	for _, r := range d.man.Experts {
		slots[r.id()] = r.Slot
	}
	d.mu.RUnlock()
	recs := make([]record, 0, len(ids))
	var written int64
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return written, err
		}
		sp, ok := c.m.Spans[id]
		if !ok {
			return written, fmt.Errorf("drives: %s is not in the mirror", id)
		}
		buf, crc, err := c.read(ctx, sp)
		if err != nil {
			return written, err
		}
		slot, ok := slots[id]
		if !ok {
			slot, next = next, next+alignUp(int64(len(buf)))
		}
		if _, err := c.w.WriteAt(buf, slot); err != nil {
			return written, fmt.Errorf("drives: write %s to %s: %w", id, d.path, err)
		}
		written += int64(len(buf))
		recs = append(recs, record{Layer: id.Layer, Expert: id.Expert, Slot: slot, Len: int64(len(buf)), CRC: crc})
	}
	if err := c.w.Sync(); err != nil {
		return written, fmt.Errorf("drives: sync %s: %w", d.path, err)
	}
	d.mu.RLock()
	f := d.file
	d.mu.RUnlock()
	for _, r := range recs {
		ok, err := checkCopy(ctx, f, r, c.m.Spans[r.id()])
		if err != nil {
			return written, err
		}
		if !ok {
			return written, fmt.Errorf("%w: %s on %s", ErrCopy, r.id(), d.path)
		}
	}
	d.saveMu.Lock()
	defer d.saveMu.Unlock()
	d.mu.RLock()
	m := d.man
	d.mu.RUnlock()
	m.Experts = slices.DeleteFunc(slices.Clone(m.Experts), func(old record) bool {
		return slices.ContainsFunc(recs, func(r record) bool { return r.id() == old.id() })
	})
	m.Experts = append(m.Experts, recs...)
	if err := m.save(d.dir); err != nil {
		return written, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.man = m
	for _, r := range recs {
		d.held[r.id()] = r
	}
	return written, nil
}

// read returns sp's ReplicaRange from the mirror (zeros past the shard's
// end) and the CRC-32C of the span. A stream install's Source fetches and
// verifies missing bytes first (Ensure).
func (c *copier) read(ctx context.Context, sp ckpt.ExpertSpan) ([]byte, uint32, error) {
	src, ok := c.sources[sp.Shard]
	if !ok {
		var err error
		if src, err = c.m.Open(ctx, filepath.Join(c.m.Dir, sp.Shard)); err != nil {
			return nil, 0, fmt.Errorf("drives: open %s: %w", sp.Shard, err)
		}
		c.sources[sp.Shard] = src
	}
	if e, ok := src.(ckpt.Ensurer); ok {
		if err := e.Ensure(ctx, sp.Offset, sp.Size); err != nil {
			return nil, 0, fmt.Errorf("drives: fetch %s bytes %d to %d: %w", sp.Shard, sp.Offset, sp.End(), err)
		}
	}
	lo, hi := experts.ReplicaRange(sp)
	buf := make([]byte, hi-lo)
	end := min(hi, src.Size())
	if err := src.ReadAt(ctx, buf[:end-lo], lo); err != nil {
		return nil, 0, fmt.Errorf("drives: read %s bytes %d to %d: %w", sp.Shard, lo, end, err)
	}
	return buf, experts.SpanCRC(buf[sp.Offset-lo : sp.End()-lo]), nil
}
