package kernels

import (
	"math/bits"
	"sync"
	"sync/atomic"
)

// pool is a fixed set of helper goroutines, started once per backend. An
// operation is split into chunks of rows; the calling goroutine and up to
// `helpers` helpers take chunks from a shared counter until none are left,
// so a helper that is busy elsewhere (another concurrent call, or a slow
// core on a shared machine) never holds the caller up by more than a chunk.
type pool struct {
	helpers int
	work    chan *task
}

func newPool(threads int) *pool {
	p := &pool{helpers: max(threads-1, 0)}
	if p.helpers > 0 {
		p.work = make(chan *task, 4*p.helpers)
		for range p.helpers {
			go p.loop()
		}
	}
	return p
}

func (p *pool) loop() {
	for t := range p.work {
		t.runChunks()
		t.wg.Done()
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
	next        atomic.Int64
	wg          sync.WaitGroup
}

// run executes t over rows in chunks of chunk rows.
func (p *pool) run(t *task, rows, chunk int) {
	t.rows, t.chunk = rows, chunk
	t.next.Store(0)
	chunks := (rows + chunk - 1) / chunk
	k := min(p.helpers, chunks-1)
	if k > 0 {
		t.wg.Add(k)
		for range k {
			p.work <- t
		}
	}
	t.runChunks()
	t.wg.Wait()
}

func (t *task) runChunks() {
	var scratch []float32
	var buf *[]float32
	if t.scratchLen > 0 {
		buf = t.bufs.get(t.scratchLen)
		scratch = *buf
	}
	for {
		lo := int(t.next.Add(int64(t.chunk))) - t.chunk
		if lo >= t.rows {
			break
		}
		t.exec(t, lo, min(lo+t.chunk, t.rows), scratch)
	}
	if buf != nil {
		t.bufs.put(buf)
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
