package kernels

import (
	"math/bits"
	"sync"
	"sync/atomic"
)

// pool is a fixed set of helper goroutines, started once per backend. An
// operation is split into chunks of rows; the calling goroutine and up to
// `helpers` helpers claim chunks from a shared counter until none are left.
// The caller waits only for chunks that were claimed, never for a helper to
// wake up: on a busy machine a helper may not run for a scheduler time
// slice, and by then the caller has done its share of the work.
type pool struct {
	helpers int
	work    chan job
}

// job is a task as sent to a helper: gen tells a late helper that the task
// has moved on (finished, or recycled for another call).
type job struct {
	t   *task
	gen uint32
}

func newPool(threads int) *pool {
	p := &pool{helpers: max(threads-1, 0)}
	if p.helpers > 0 {
		p.work = make(chan job, 4*p.helpers)
		for range p.helpers {
			go p.loop()
		}
	}
	return p
}

func (p *pool) loop() {
	for j := range p.work {
		j.t.runChunks(j.gen)
	}
}

// task is one operation in flight. Tasks are recycled through a sync.Pool so
// that a call allocates nothing once warm.
type task struct {
	exec  func(t *task, lo, hi int, scratch []float32) // a package-level function, so no closure
	isa   int
	op    uint8
	w, w3 Matrix
	x     []float32
	dst   []float32
	u     []float32
	n     int
	act   Activation

	rows, chunk int
	scratchLen  int
	bufs        *bufPool

	// state is gen<<32 | chunks claimed. Claiming by compare-and-swap on
	// the whole word means a helper holding an old generation can never
	// claim (or read the fields of) a later call's chunks.
	state  atomic.Uint64
	chunks atomic.Uint64
	done   atomic.Uint64
	// finished receives one token per call, from whoever completes the
	// last chunk.
	finished chan struct{}
}

// run executes t over rows in chunks of chunk rows.
func (p *pool) run(t *task, rows, chunk int) {
	if t.finished == nil {
		t.finished = make(chan struct{}, 1)
	}
	gen := uint32(t.state.Load()>>32) + 1
	// Close the new generation to claims before changing any field: a
	// helper still holding the previous call's job could otherwise read
	// the new chunk count, claim with the old generation's CAS (the state
	// not yet replaced) and add a stale count to done, after which the
	// last chunk never sees done == chunks and the call waits forever.
	t.state.Store(uint64(gen)<<32 | 0xffffffff)
	t.rows, t.chunk = rows, chunk
	chunks := uint64((rows + chunk - 1) / chunk)
	t.chunks.Store(chunks)
	t.done.Store(0)
	t.state.Store(uint64(gen) << 32) // publishes the fields above to claimers
	for range min(uint64(p.helpers), chunks-1) {
		select {
		case p.work <- job{t, gen}:
		default: // every helper already has a backlog: do the work here
		}
	}
	t.runChunks(gen)
	<-t.finished
}

// runChunks claims and runs chunks of generation gen until none are left.
// Once its last chunk is done the call may return and the task be reused,
// so after that only the atomic words are read; everything else is read
// while a claimed chunk holds the call open.
func (t *task) runChunks(gen uint32) {
	var buf *[]float32
	var bufs *bufPool
	for {
		v := t.state.Load()
		if uint32(v>>32) != gen || v&0xffffffff >= t.chunks.Load() {
			break
		}
		if !t.state.CompareAndSwap(v, v+1) {
			continue
		}
		chunks, finished := t.chunks.Load(), t.finished
		if buf == nil && t.scratchLen > 0 {
			bufs = t.bufs
			buf = bufs.get(t.scratchLen)
		}
		var scratch []float32
		if buf != nil {
			scratch = *buf
		}
		lo := int(v&0xffffffff) * t.chunk
		t.exec(t, lo, min(lo+t.chunk, t.rows), scratch)
		if t.done.Add(1) == chunks {
			finished <- struct{}{}
		}
	}
	if buf != nil {
		bufs.put(buf)
	}
}

// bufPool recycles float32 scratch buffers (per-call intermediates and
// per-worker row buffers) so that steady-state calls do not allocate.
type bufPool struct{ p sync.Pool }

func (b *bufPool) get(n int) *[]float32 {
	if v, ok := b.p.Get().(*[]float32); ok {
		if cap(*v) >= n {
			*v = (*v)[:n]
			return v
		}
		// Too small: let it go; the larger one replaces it.
	}
	// Capacities are powers of two so that the differently sized buffers
	// of one operation (x layouts, intermediates) can stand in for each other.
	s := make([]float32, n, 1<<bits.Len(uint(n-1)))
	return &s
}

func (b *bufPool) put(v *[]float32) { b.p.Put(v) }
