package engine

import (
	"github.com/deltafin/deltafin/kernels"
)

// A batched product W·x over T positions reads, for every row of W, the
// inputs of all T positions: over a long prompt they no longer fit in
// the core's caches and every row streams them again from memory, so the
// cost per position grows with T (k3-tiny's 128-column projections: about
// 6× per position from 1,024 to 16,384 positions on the 2-vCPU VM). Cut
// into blocks whose inputs fit in L2, it stays linear. Each output is the
// same dot product either way: the bits do not change.

// posBlockBytes is the input bytes of one block of positions.
const posBlockBytes = 256 << 10

// posBlock is the positions per block for inputs of cols: at least 128, so
// that each weight row is still widened once per many positions and a
// block still goes to a GPU by kernels.Accelerate's rule (96 positions for
// streamed weights).
func posBlock(cols int) int { return max(128, posBlockBytes/(4*cols)) }

// matBlocks computes y = W·x for T positions, a block of positions at a
// time. x: [T, Cols] → y: [T, Rows].
func matBlocks(be kernels.Backend, y []float32, w kernels.Matrix, x []float32, T int) {
	blk := posBlock(w.Cols)
	for t0 := 0; t0 < T; t0 += blk {
		n := min(blk, T-t0)
		be.MatMul(y[t0*w.Rows:(t0+n)*w.Rows], w, x[t0*w.Cols:(t0+n)*w.Cols], n)
	}
}

// expertBlocks computes dst = W2·act(W1·x, W3·x) for T positions, a block
// of positions at a time. x, dst: [T, D].
func expertBlocks(be kernels.Backend, dst []float32, e kernels.Expert, act kernels.Activation, x []float32, T int) {
	D := e.W1.Cols
	blk := posBlock(D)
	for t0 := 0; t0 < T; t0 += blk {
		n := min(blk, T-t0)
		be.ExpertFFN(dst[t0*D:(t0+n)*D], e, act, x[t0*D:(t0+n)*D], n)
	}
}
