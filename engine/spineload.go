package engine

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/checkpoint/safetensors"
	"github.com/deltafin/deltafin/experts"
	"github.com/deltafin/deltafin/internal/directio"
)

// Loading the pinned spine at the disk's bandwidth. The spine a Model keeps
// in RAM (the globals and the pinned layers: about 106 GB of K3 on a 128 GB
// Mac) is read at open by many readers in parallel, as 4 MiB positional
// reads into aligned buffers with the page cache bypassed (O_DIRECT,
// F_NOCACHE: directio_*.go), like the expert store's and the spine ring's
// reads; one thread through buffered reads reached a fraction of an SSD's
// bandwidth and doubled the RAM the spine took while the page cache held a
// second copy. Each float tensor is checked for NaN and Inf (finite.go) as
// soon as the extent holding it has landed, by the same workers, in pieces,
// so that the check runs in parallel with the reads still in flight.
//
// A shard is read through the engine's own descriptor when its Source is a
// plain local file or an ckpt.Ensurer (asked for each range first: a stream
// install's sparse shard); any other Source is read with its ReadAt, in
// parallel too.

// pinnedReaders is the number of reads in flight while the spine loads:
// an SSD reaches its bandwidth with a deep queue (the expert store keeps
// 32), and the workers also run the finite checks.
const pinnedReaders = 16

// pinnedGap is the widest hole between two tensors of one shard that is
// read through rather than splitting the extent: its bytes stay in RAM with
// the spine.
const pinnedGap = 64 << 10

// checkPiece is the most bytes of one tensor one finite check covers.
const checkPiece = 4 << 20

// OpenStats says what opening the model took.
type OpenStats struct {
	// IndexSeconds: config, headers, index and validation (no weight read).
	IndexSeconds float64
	// PinnedBytes were read from disk for the pinned spine (alignment
	// included) in PinnedSeconds, checked for NaN and Inf on the way.
	PinnedBytes   int64
	PinnedSeconds float64
	Readers       int // reads in flight while it loaded
	Direct        bool
}

// OpenStats returns what opening the model took.
func (m *Model) OpenStats() OpenStats { return m.openStats }

// pinnedExtent is a run of tensors of one shard read as one buffer.
type pinnedExtent struct {
	sh      *shard
	sf      *experts.ShardFile // nil: read through sh.src
	off, n  int64              // the tensors' bytes in the file
	lo, hi  int64              // the bytes read: [off, off+n), aligned for direct reads
	buf     []byte             // file bytes [lo, hi)
	refs    []*tensorRef
	pending atomic.Int32 // chunks not yet landed
}

// bytes returns tensor r's bytes inside the extent.
func (e *pinnedExtent) bytes(r *tensorRef) []byte {
	at := r.t.Offset - e.lo
	return e.buf[at : at+r.t.Size : at+r.t.Size]
}

// pinnedJob reads file bytes [lo, hi) of ext, or (check set) checks bytes
// [lo, hi) of tensor check.
type pinnedJob struct {
	ext    *pinnedExtent
	lo, hi int64
	check  *tensorRef
}

// pinnedLoad is one run of loadPinned.
type pinnedLoad struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	jobs   chan pinnedJob
	left   atomic.Int64 // jobs not yet finished; the last one closes jobs
	bytes  atomic.Int64
}

// loadPinned reads the tensors refs into RAM and checks the float ones
// for NaN and Inf; it returns each tensor's bytes. Files opened for direct
// reads are closed before it returns (the buffers stay).
func loadPinned(ctx context.Context, dir string, refs []*tensorRef, mode directio.Mode) (map[*tensorRef][]byte, OpenStats, error) {
	start := time.Now()
	st := OpenStats{Readers: pinnedReaders}
	exts, files, err := pinnedExtents(dir, refs, mode)
	defer func() {
		for _, sf := range files {
			sf.Close()
		}
	}()
	if err != nil {
		return nil, st, err
	}
	reads, checks := 0, 0
	for _, e := range exts {
		n := int((e.hi - e.lo + experts.ReadChunk - 1) / experts.ReadChunk)
		e.pending.Store(int32(n))
		reads += n
		for _, r := range e.refs {
			if _, ok := matrixDType(r.t.DType); ok {
				checks += int((r.t.Size + checkPiece - 1) / checkPiece)
			}
		}
		st.Direct = st.Direct || e.sf != nil && e.sf.Direct()
	}
	l := &pinnedLoad{jobs: make(chan pinnedJob, reads+checks)}
	l.ctx, l.cancel = context.WithCancelCause(ctx)
	defer l.cancel(nil)
	l.left.Store(int64(reads + checks))
	if reads+checks == 0 {
		close(l.jobs)
	}
	for _, e := range exts {
		for lo := e.lo; lo < e.hi; lo += experts.ReadChunk {
			l.jobs <- pinnedJob{ext: e, lo: lo, hi: min(lo+experts.ReadChunk, e.hi)}
		}
	}
	var wg sync.WaitGroup
	for range pinnedReaders {
		wg.Go(l.worker)
	}
	wg.Wait()
	st.PinnedBytes, st.PinnedSeconds = l.bytes.Load(), time.Since(start).Seconds()
	if err := context.Cause(l.ctx); err != nil {
		return nil, st, err
	}
	views := make(map[*tensorRef][]byte, len(refs))
	for _, e := range exts {
		for _, r := range e.refs {
			views[r] = e.bytes(r)
		}
	}
	return views, st, nil
}

// pinnedExtents sorts refs by shard and offset and merges neighbours into
// extents with their buffers; it opens the shards read by descriptor.
func pinnedExtents(dir string, refs []*tensorRef, mode directio.Mode) ([]*pinnedExtent, []*experts.ShardFile, error) {
	refs = slices.Clone(refs)
	slices.SortFunc(refs, func(a, b *tensorRef) int {
		if c := strings.Compare(a.shard.name, b.shard.name); c != 0 {
			return c
		}
		return cmp.Compare(a.t.Offset, b.t.Offset)
	})
	files := map[*shard]*experts.ShardFile{}
	var opened []*experts.ShardFile
	var exts []*pinnedExtent
	for _, r := range refs {
		sf, seen := files[r.shard]
		if !seen {
			_, file := r.shard.src.(*ckpt.FileSource)
			_, ensurer := r.shard.src.(ckpt.Ensurer)
			if file || ensurer {
				var err error
				if sf, _, err = experts.OpenShard(filepath.Join(dir, r.shard.name), r.shard.name, mode, r.shard.src); err != nil {
					return nil, opened, fmt.Errorf("%w: %w", ErrCheckpoint, err)
				}
				opened = append(opened, sf)
			}
			files[r.shard] = sf
		}
		if k := len(exts) - 1; k >= 0 && exts[k].sh == r.shard && r.t.Offset-(exts[k].off+exts[k].n) <= pinnedGap {
			e := exts[k]
			e.n = max(e.n, r.t.End()-e.off)
			e.refs = append(e.refs, r)
			continue
		}
		exts = append(exts, &pinnedExtent{sh: r.shard, sf: sf, off: r.t.Offset, n: r.t.Size, refs: []*tensorRef{r}})
	}
	for _, e := range exts {
		e.lo, e.hi = e.off, e.off+e.n
		if e.sf != nil && e.sf.Direct() {
			e.lo, e.hi = directio.AlignDown(e.lo), directio.AlignUp(e.hi)
		}
		e.buf = directio.Buffer(int(e.hi - e.lo))
	}
	return exts, opened, nil
}

func (l *pinnedLoad) worker() {
	for j := range l.jobs {
		if l.ctx.Err() == nil {
			var err error
			if j.check != nil {
				err = l.checkFinite(j)
			} else {
				err = l.read(j)
			}
			if err != nil {
				l.cancel(err)
			}
		}
		if j.check == nil && j.ext.pending.Add(-1) == 0 {
			// The extent has landed: its checks can run.
			for _, r := range j.ext.refs {
				if _, ok := matrixDType(r.t.DType); ok {
					for a := int64(0); a < r.t.Size; a += checkPiece {
						l.jobs <- pinnedJob{ext: j.ext, lo: a, hi: min(a+checkPiece, r.t.Size), check: r}
					}
				}
			}
		}
		if l.left.Add(-1) == 0 {
			close(l.jobs)
		}
	}
}

// read reads one chunk of an extent.
func (l *pinnedLoad) read(j pinnedJob) error {
	e := j.ext
	buf := e.buf[j.lo-e.lo : j.hi-e.lo]
	lo, hi := max(j.lo, e.off), min(j.hi, e.off+e.n) // the extent's own bytes
	failed := func(format string, args ...any) error {
		// Name the first tensor the chunk holds.
		for _, r := range e.refs {
			if r.t.End() > lo {
				return r.errorf(format, args...)
			}
		}
		return fmt.Errorf("%w: %s: %s", ErrCheckpoint, e.sh.name, fmt.Sprintf(format, args...))
	}
	if e.sf == nil {
		if err := e.sh.src.ReadAt(l.ctx, buf[lo-j.lo:hi-j.lo], lo); err != nil {
			if l.ctx.Err() != nil {
				return l.ctx.Err()
			}
			return failed("reading %d bytes at %d: %v", hi-lo, lo, err)
		}
		l.bytes.Add(hi - lo)
		return nil
	}
	sf := e.sf
	if sf.Sparse() {
		if err := sf.Ensure(l.ctx, lo, hi-lo); err != nil {
			return failed("fetching bytes %d to %d: %v", lo, hi, err)
		}
	}
	got, err := sf.ReadFull(buf, j.lo)
	l.bytes.Add(got)
	if err != nil {
		return failed("reading %d bytes at %d: %v", len(buf), j.lo, err)
	}
	if got < hi-j.lo {
		return fmt.Errorf("%w: %w: %s ends at byte %d, inside the spine", ErrCheckpoint, ckpt.ErrTruncated, sf.Name(), j.lo+got)
	}
	if !sf.Direct() {
		sf.DropBehind(j.lo, int64(len(buf)))
	}
	return nil
}

// checkFinite checks bytes [lo, hi) of a float tensor, element-aligned.
func (l *pinnedLoad) checkFinite(j pinnedJob) error {
	r := j.check
	m, err := r.matrix(j.ext.bytes(r))
	if err != nil {
		return err
	}
	size := safetensors.DTypeSize(r.t.DType)
	piece := m
	piece.Data = m.Data[j.lo:j.hi]
	if i := firstNonFinite(piece); i >= 0 {
		return nonFiniteError(r, int(j.lo/size)+i, m.Cols)
	}
	return nil
}
