//go:build cgo && (amd64 || arm64)

package kernels

/*
#include "kern.h"
*/
import "C"

// expertsFFN runs es as one pool task: phase 0 is every expert's W1/W3
// rows back to back (rows [i·I, (i+1)·I) are expert i's), phase 1 every
// W2's (rows [i·D, (i+1)·D)); a chunk may straddle two experts, and
// fastExec splits it. Each row is the same C call on the same bytes as in
// ExpertFFN, so the results are identical.
func (b *fastBackend) expertsFFN(dst [][]float32, es []Expert, act Activation, x [][]float32) bool {
	if len(es) < 2 || b.threads == 1 || !sameShape(es) {
		return false
	}
	for i, e := range es {
		mustValid(e.W1)
		mustValid(e.W2)
		mustValid(e.W3)
		checkFFN(dst[i], e, x[i], 1)
	}
	ne, inter, dim := len(es), es[0].W1.Rows, es[0].W1.Cols
	// In decode every expert reads the same x: lay it out once (it runs on
	// the caller before the helpers are posted).
	xStride := 0
	for _, xi := range x[1:] {
		if &xi[0] != &x[0][0] {
			xStride = dim
		}
	}
	nx := 1
	if xStride > 0 {
		nx = ne
	}
	gb, ub, xb := b.bufs.get(ne*inter), b.bufs.get(ne*inter), b.bufs.get(nx*dim)
	for i := range nx {
		if es[0].W1.DType == MXFP4 {
			b.mxLayout((*xb)[i*dim:(i+1)*dim], x[i][:dim])
		} else {
			copy((*xb)[i*dim:(i+1)*dim], x[i][:dim])
		}
	}
	t := b.tasks.getFor(b.isa, &b.bufs, fastExec)
	t.op, t.es, t.dsts, t.x, t.xStride, t.g, t.u, t.n, t.act = opFFNs, es, dst, *xb, xStride, *gb, *ub, 1, act
	t.gx = t.g
	var gxb *[]float32
	if es[0].W2.DType == MXFP4 {
		gxb = b.bufs.get(ne * inter)
		t.gx = *gxb
		t.between = fastLayoutGs
	}
	all := func(m Matrix, rows int) Matrix { m.Rows = rows; return m } // for chunkRows only
	t.nphase = 2
	t.rows[0], t.chunk[0] = ne*inter, b.chunkRows(all(es[0].W1, ne*inter), 2)
	t.rows[1], t.chunk[1] = ne*dim, b.chunkRows(all(es[0].W2, ne*dim), 1)
	b.pool.run(t)
	b.tasks.put(t)
	b.bufs.put(xb, gxb, gb, ub)
	return true
}

// fastLayoutGs lays out each expert's g for its W2's MXFP4 matvec.
func fastLayoutGs(t *task) {
	inter := t.es[0].W1.Rows
	for i := range t.es {
		C.df_mx_layout(C.int(t.isa), floatPtr(t.g[i*inter:]), C.int64_t(inter), floatPtr(t.gx[i*inter:]))
	}
}

// execExperts runs rows [lo, hi) of phase ph of an opFFNs task, one C call
// per expert the range touches.
func execExperts(t *task, ph, lo, hi int) {
	inter, dim := t.es[0].W1.Rows, t.es[0].W1.Cols
	size := inter
	if ph == 1 {
		size = dim
	}
	for lo < hi {
		i := lo / size
		end := min(hi, (i+1)*size)
		e, r0, r1 := t.es[i], lo-i*size, end-i*size
		if ph == 0 {
			upRows(t.isa, e.W1, e.W3, t.act, t.x[i*t.xStride:], 1, t.g[i*inter:], t.u[i*inter:], r0, r1, nil)
		} else {
			matRows(t.isa, e.W2, t.gx[i*inter:], 1, t.dsts[i], r0, r1, nil)
		}
		lo = end
	}
}
