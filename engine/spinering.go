package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/experts"
	"github.com/deltafin/deltafin/internal/directio"
)

// spineRing streams the spine layers past the pinned prefix. A streamed
// layer is read into one of two reusable slots, in layer order and around
// the end of the pass: when a layer's slot is released, the next streamed
// layer in cyclic order starts loading into it, so layer i+1 loads while
// layer i computes, and the first streamed layer of the next pass loads
// while the last one and lm_head compute. The disk then always has a read
// queued while the engine waits on it.
//
// Reads go like the expert store's: each layer's spine is a few file
// extents (its tensors, merged where they lie back to back), read as 4 MiB
// positional reads by many readers into an aligned buffer, bypassing the
// page cache (O_DIRECT, F_NOCACHE), since per-token spine traffic would
// only evict what is pinned. A layer's weights are built, and handed out,
// only once every chunk has landed without error; the bytes are the
// checkpoint's, so where they were read from changes no result. With the
// int8 spine, whose tensors live in two checkpoints, a slot is filled by
// the plain loader instead.
type spineRing struct {
	ck, i8   *checkpoint
	cfg      *config
	first, n int // layers first..n-1 stream
	fast     bool
	extents  [][]spineExtent // per streamed layer (index layer − first)
	files    map[string]*experts.ShardFile
	chunk    int64
	meter    *experts.Meter

	ctx    context.Context // cancelled by close; loads run under it
	cancel context.CancelFunc
	jobs   chan spineJob
	wg     sync.WaitGroup
	bytes  atomic.Int64 // read from disk, alignment included

	// pass serialises forward passes: the ring hands layers out in one
	// pass's order.
	pass sync.Mutex

	mu     sync.Mutex
	free   []*spineSlot
	queue  []*spineLoad // loads started, in the order passes will take them
	next   int          // the layer the next load reads
	closed bool
}

// spineExtent is one run of a layer's spine tensors in one shard: bytes
// [off, off+n) of the file, read as [lo, hi) (aligned for direct reads)
// into the slot at at.
type spineExtent struct {
	sf         *experts.ShardFile
	off, n     int64
	lo, hi, at int64
}

type spineSlot struct{ buf []byte }

// spineLoad is one streamed layer being read into a slot.
type spineLoad struct {
	layer int
	slot  *spineSlot
	done  chan struct{} // closed once lw and err are set
	lw    layerWeights
	err   error

	mu      sync.Mutex
	pending int
}

type spineJob struct {
	ld   *spineLoad
	ext  *spineExtent
	lo   int64 // file offset of this chunk
	buf  []byte
	need int64 // bytes of the chunk that hold the extent: fewer is a truncated file
}

// spineSlots is the number of streamed layers in RAM at once: the one
// computing and the next one loading.
const spineSlots = 2

// spineReaders is the number of spine chunk reads in flight. Eight reach
// the disk's bandwidth here (STREAMING.md); the expert store's 32 readers
// then hold most of the queue while a layer's experts are being read, so
// the reads the computing layer waits for go first.
const spineReaders = 8

// spineGap is the widest hole between two of a layer's tensors that is
// read through rather than splitting the read in two.
const spineGap = 1 << 20

// newSpineRing starts streaming layers first..Layers-1 of the checkpoint in
// dir: the first two loads start at once.
func newSpineRing(ctx context.Context, dir string, ck, i8 *checkpoint, c *config, first int, mode directio.Mode, meter *experts.Meter) (*spineRing, error) {
	r := &spineRing{ck: ck, i8: i8, cfg: c, first: first, n: c.Layers, fast: i8 == nil, files: map[string]*experts.ShardFile{}, chunk: experts.ReadChunk, next: first, meter: meter}
	r.ctx, r.cancel = context.WithCancel(context.WithoutCancel(ctx))
	var slotBytes int64
	chunks := 0
	if r.fast {
		byLayer, _ := ck.spineTensors(c)
		for i := first; i < c.Layers; i++ {
			ext, err := r.layerExtents(dir, byLayer[i], mode)
			if err != nil {
				r.close()
				return nil, err
			}
			var size int64
			for k := range ext {
				ext[k].at = size
				size += ext[k].hi - ext[k].lo
				chunks += int((ext[k].hi - ext[k].lo + r.chunk - 1) / r.chunk)
			}
			r.extents = append(r.extents, ext)
			slotBytes = max(slotBytes, size)
		}
	}
	// Room for every chunk of the slots' loads: submitting never blocks.
	r.jobs = make(chan spineJob, spineSlots*chunks+1)
	for range spineSlots {
		s := &spineSlot{}
		if r.fast {
			s.buf = directio.Buffer(int(slotBytes))
		}
		r.free = append(r.free, s)
	}
	if r.fast {
		for range spineReaders {
			r.wg.Add(1)
			go r.reader()
		}
	}
	r.mu.Lock()
	r.fill()
	r.mu.Unlock()
	return r, nil
}

// layerExtents sorts a layer's spine tensors by shard and offset and merges
// neighbours into extents.
func (r *spineRing) layerExtents(dir string, refs []*tensorRef, mode directio.Mode) ([]spineExtent, error) {
	sort.Slice(refs, func(a, b int) bool {
		if refs[a].shard.name != refs[b].shard.name {
			return refs[a].shard.name < refs[b].shard.name
		}
		return refs[a].t.Offset < refs[b].t.Offset
	})
	var ext []spineExtent
	for _, t := range refs {
		sf := r.files[t.shard.name]
		if sf == nil {
			f, _, err := experts.OpenShard(filepath.Join(dir, t.shard.name), t.shard.name, mode, t.shard.src)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrCheckpoint, err)
			}
			r.files[t.shard.name], sf = f, f
		}
		end := t.t.Offset + t.t.Size
		if k := len(ext) - 1; k >= 0 && ext[k].sf == sf && t.t.Offset-(ext[k].off+ext[k].n) <= spineGap {
			ext[k].n = max(ext[k].n, end-ext[k].off)
			continue
		}
		ext = append(ext, spineExtent{sf: sf, off: t.t.Offset, n: t.t.Size})
	}
	for k := range ext {
		e := &ext[k]
		e.lo, e.hi = e.off, e.off+e.n
		if e.sf.Direct() {
			e.lo, e.hi = directio.AlignDown(e.lo), directio.AlignUp(e.hi)
		}
	}
	return ext, nil
}

// fill starts loads into the free slots, in cyclic layer order. Called
// with mu held.
func (r *spineRing) fill() {
	for len(r.free) > 0 && !r.closed {
		s := r.free[len(r.free)-1]
		r.free = r.free[:len(r.free)-1]
		ld := &spineLoad{layer: r.next, slot: s, done: make(chan struct{})}
		r.queue = append(r.queue, ld)
		if r.next++; r.next == r.n {
			r.next = r.first
		}
		r.start(ld)
	}
}

// start queues ld's chunk reads, or runs the plain loader for the int8 spine.
func (r *spineRing) start(ld *spineLoad) {
	if !r.fast {
		go func() {
			l := &loader{ctx: r.ctx, ck: r.ck, i8: r.i8}
			ld.lw = l.layer(r.cfg, ld.layer)
			ld.err = l.err
			close(ld.done)
		}()
		return
	}
	ext := r.extents[ld.layer-r.first]
	var jobs []spineJob
	for k := range ext {
		e := &ext[k]
		for lo := e.lo; lo < e.hi; lo += r.chunk {
			hi := min(lo+r.chunk, e.hi)
			jobs = append(jobs, spineJob{ld: ld, ext: e, lo: lo, buf: ld.slot.buf[e.at+lo-e.lo : e.at+hi-e.lo], need: min(hi, e.off+e.n) - lo})
		}
	}
	ld.pending = len(jobs)
	for _, j := range jobs {
		r.jobs <- j
	}
}

func (r *spineRing) reader() {
	defer r.wg.Done()
	for {
		select {
		case j := <-r.jobs:
			r.chunkDone(j.ld, r.read(j))
		case <-r.ctx.Done():
			// close has stopped new loads: fail what is queued, so that
			// nothing waits on a load that will never finish.
			for {
				select {
				case j := <-r.jobs:
					r.chunkDone(j.ld, ErrClosed)
				default:
					return
				}
			}
		}
	}
}

func (r *spineRing) read(j spineJob) error {
	if err := r.ctx.Err(); err != nil {
		return ErrClosed
	}
	sf := j.ext.sf
	if sf.Sparse() {
		lo, hi := max(j.lo, j.ext.off), j.lo+j.need
		if err := sf.Ensure(r.ctx, lo, hi-lo); err != nil {
			return fmt.Errorf("%w: fetch layer %d's spine (%s bytes %d to %d): %w", ErrCheckpoint, j.ld.layer, sf.Name(), lo, hi, err)
		}
	}
	r.meter.Change(1)
	got, err := sf.ReadFull(j.buf, j.lo)
	r.meter.Change(-1)
	r.bytes.Add(got)
	if err != nil {
		return fmt.Errorf("%w: read layer %d's spine from %s at %d: %w", ErrCheckpoint, j.ld.layer, sf.Name(), j.lo, err)
	}
	if got < j.need {
		return fmt.Errorf("%w: %w: %s ends at byte %d, inside layer %d's spine", ErrCheckpoint, ckpt.ErrTruncated, sf.Name(), j.lo+got, j.ld.layer)
	}
	if !sf.Direct() {
		sf.DropBehind(j.lo, int64(len(j.buf)))
	}
	return nil
}

// chunkDone records one chunk; the last one builds the layer's weights
// over the slot and publishes the load.
func (r *spineRing) chunkDone(ld *spineLoad, err error) {
	ld.mu.Lock()
	if ld.err == nil {
		ld.err = err
	}
	ld.pending--
	last := ld.pending == 0
	ld.mu.Unlock()
	if !last {
		return
	}
	if ld.err == nil {
		l := &loader{ctx: r.ctx, ck: r.ck, view: func(t *tensorRef) []byte { return r.view(ld, t) }}
		ld.lw = l.layer(r.cfg, ld.layer)
		ld.err = l.err
	}
	close(ld.done)
}

// view returns tensor t's bytes inside ld's slot, or nil when the layer's
// extents do not hold it.
func (r *spineRing) view(ld *spineLoad, t *tensorRef) []byte {
	for _, e := range r.extents[ld.layer-r.first] {
		if e.sf.Name() == t.shard.name && t.t.Offset >= e.off && t.t.Offset+t.t.Size <= e.off+e.n {
			at := e.at + t.t.Offset - e.lo
			return ld.slot.buf[at : at+t.t.Size : at+t.t.Size]
		}
	}
	return nil
}

// get returns layer i's weights once loaded; the caller releases them
// when the layer has run. Passes take layers in order, so i is at the
// head of the queue unless a pass ended early: then the ring restarts at i.
func (r *spineRing) get(ctx context.Context, i int) (*spineLoad, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, ErrClosed
	}
	if len(r.queue) == 0 || r.queue[0].layer != i {
		stale := r.queue
		r.queue, r.next = nil, i
		r.mu.Unlock()
		for _, ld := range stale {
			<-ld.done // its slot is being written until then
			r.release(ld)
		}
		r.mu.Lock()
		if len(r.queue) == 0 || r.queue[0].layer != i {
			r.mu.Unlock()
			return nil, fmt.Errorf("engine: spine ring out of order at layer %d", i)
		}
	}
	ld := r.queue[0]
	r.queue = r.queue[1:]
	r.mu.Unlock()
	select {
	case <-ld.done:
	case <-ctx.Done():
		go func() { <-ld.done; r.release(ld) }()
		return nil, ctx.Err()
	}
	if ld.err != nil {
		r.release(ld)
		return nil, ld.err
	}
	return ld, nil
}

// release gives ld's slot back; the next layer in cyclic order starts
// loading into it. The layer's weights must not be used afterwards.
func (r *spineRing) release(ld *spineLoad) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ld.lw = layerWeights{}
	r.free = append(r.free, ld.slot)
	r.fill()
}

// close stops the readers once the loads in flight have ended and closes
// the files.
func (r *spineRing) close() error {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.cancel()
	r.wg.Wait()
	var first error
	for _, sf := range r.files {
		if err := sf.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
