package kernels

import (
	"fmt"
	"sync"
)

// taskPool recycles tasks; get binds one to a backend's executor.
type taskPool struct{ p sync.Pool }

func (tp *taskPool) getFor(isa int, bufs *bufPool, exec func(*task, int, int, int, []float32)) *task {
	t, ok := tp.p.Get().(*task)
	if !ok {
		t = new(task)
	}
	t.isa, t.bufs, t.exec = isa, bufs, exec
	return t
}

// put clears the task's references to the caller's slices before recycling
// it, so a pooled task does not keep an expert's bytes alive.
func (tp *taskPool) put(t *task) {
	t.w, t.w3, t.w2 = Matrix{}, Matrix{}, Matrix{}
	t.x, t.dst, t.u, t.g, t.gx = nil, nil, nil, nil, nil
	t.es, t.dsts = nil, nil
	t.scratchLen = 0
	t.between = nil
	tp.p.Put(t)
}

// checkFFN panics unless e is a consistent expert and x, dst hold n rows of
// its hidden size: shapes are the caller's contract (see Backend).
func checkFFN(dst []float32, e Expert, x []float32, n int) {
	inter, dim := e.W1.Rows, e.W1.Cols
	if e.W3.Rows != inter || e.W3.Cols != dim || e.W2.Rows != dim || e.W2.Cols != inter ||
		len(x) < n*dim || len(dst) < n*dim {
		panic(fmt.Sprintf("kernels: ExpertFFN: W1 and W3 must be [I,D], W2 [D,I], x and dst %d×D; have "+
			"W1 %s[%d,%d] W3 %s[%d,%d] W2 %s[%d,%d], x %d, dst %d", n,
			e.W1.DType, e.W1.Rows, e.W1.Cols, e.W3.DType, e.W3.Rows, e.W3.Cols, e.W2.DType, e.W2.Rows, e.W2.Cols,
			len(x), len(dst)))
	}
}
