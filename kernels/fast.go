//go:build cgo && (amd64 || arm64)

package kernels

/*
#cgo CFLAGS: -O3 -std=c11
#cgo LDFLAGS: -lm
#include "kern.h"
*/
import "C"

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/cpu"
)

const (
	isaGeneric = C.DF_ISA_GENERIC
	isaAVX2    = C.DF_ISA_AVX2
	isaNEON    = C.DF_ISA_NEON
	isaAVX512  = C.DF_ISA_AVX512
)

func init() { C.df_init() }

// readBytes reads b once with the best instruction set's C loop (see
// MemoryRead).
func readBytes(b []byte) uint64 {
	return uint64(C.df_read(C.int(fastISAs()[0].isa), bytePtr(b), C.int64_t(len(b))))
}

// fmaLoop runs the best instruction set's C FMA loop (see FMAPeak) and
// returns its lane count and the lanes' sum.
func fmaLoop(n int, a, b float32) (int, float64) { return fmaLoopISA(fastISAs()[0].isa, n, a, b) }

// fmaLoopISA is fmaLoop on the C loop of isa.
func fmaLoopISA(isa, n int, a, b float32) (int, float64) {
	var lanes C.int64_t
	s := C.df_fma(C.int(isa), C.int64_t(n), C.float(a), C.float(b), &lanes)
	return int(lanes), float64(s)
}

// fastISAs lists the C instruction sets this build has that this CPU runs,
// fastest first, by backend name.
func fastISAs() []isaInfo {
	var out []isaInfo
	switch runtime.GOARCH {
	case "amd64":
		// x/sys/cpu also checks that the OS saves the YMM registers.
		if cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C {
			if cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW {
				out = append(out, isaInfo{"avx512", isaAVX512})
			}
			out = append(out, isaInfo{"avx2", isaAVX2})
		}
	case "arm64":
		out = append(out, isaInfo{"neon", isaNEON})
	}
	return append(out, isaInfo{"c", isaGeneric})
}

type isaInfo struct {
	name string
	isa  int
}

// fastBackend runs the C kernels of one instruction set on a worker pool.
type fastBackend struct {
	name    string
	isa     int
	threads int
	pool    *pool
	tasks   taskPool
	bufs    bufPool
	// mmRows is the blocked matmul's register tile rows (kern_mm.c), 0
	// where the instruction set has none.
	mmRows int
}

func newFast(info isaInfo, threads int) *fastBackend {
	b := &fastBackend{name: info.name, isa: info.isa, threads: threads, pool: newPool(threads)}
	var mr, tile, pad C.int
	if C.df_mm_params(C.int(info.isa), &mr, &tile, &pad) != 0 {
		b.mmRows = int(mr)
	}
	return b
}

// mmMinPositions is where MatMul and ExpertFFN take the blocked kernels
// (kern_mm.c): below it, widening each row once and running it over the
// positions four at a time reads the weights as fast and wastes no lanes
// on padding.
const mmMinPositions = 8

// mmSlab is the most positions one blocked pass packs: a longer prompt
// runs in passes of this many, each reading the weights once more (512
// FLOPs per weight, far past the machine's balance of compute to memory),
// so that the packed copy of x stays at 512·cols floats (15 MB for K3's
// 7168) instead of doubling a long prompt's activations, and each
// thread's partial sums at 128 KiB. 256 and 512 positions ran at the
// same fraction of the FMA peak (README).
const mmSlab = 512

// blocked reports whether n positions take the blocked kernels.
func (b *fastBackend) blocked(n int) bool { return b.mmRows > 0 && n >= mmMinPositions }

// packed returns x (n positions of cols) in the blocked kernels' layout,
// in a buffer from b.bufs, and the padded position count.
func (b *fastBackend) packed(x []float32, cols, n int) (*[]float32, int) {
	p := int(C.df_mm_padded(C.int(b.isa), C.int64_t(n)))
	xp := b.bufs.get(p * cols)
	C.df_mm_pack(C.int(b.isa), floatPtr(x[:n*cols]), C.int64_t(cols), C.int64_t(n), floatPtr(*xp))
	return xp, p
}

// mmChunk is the blocked kernels' chunk of rows: a block of DF_MM_MC rows,
// or fewer (whole register tiles) where that leaves fewer than 4 chunks
// per thread.
func (b *fastBackend) mmChunk(rows int) int {
	perThread := (rows + 4*b.threads - 1) / (4 * b.threads)
	return min(C.DF_MM_MC, max((perThread+b.mmRows-1)/b.mmRows*b.mmRows, b.mmRows))
}

func (b *fastBackend) Name() string { return b.name }

// Threads is the number of goroutines (the caller included) an operation uses.
func (b *fastBackend) Threads() int { return b.threads }

func (b *fastBackend) MatVec(dst []float32, w Matrix, x []float32) { b.MatMul(dst, w, x, 1) }

func (b *fastBackend) MatMul(dst []float32, w Matrix, x []float32, n int) {
	mustValid(w)
	checkMatMul(dst, w, x, n)
	if n <= 0 {
		return
	}
	if b.blocked(n) {
		for t0 := 0; t0 < n; t0 += mmSlab {
			m := min(mmSlab, n-t0)
			xp, p := b.packed(x[t0*w.Cols:], w.Cols, m)
			t := b.tasks.getFor(b.isa, &b.bufs, fastExec)
			t.op, t.w, t.x, t.dst, t.n = opMatMulBlocked, w, *xp, dst[t0*w.Rows:], m
			t.scratchLen = C.DF_MM_MC*C.DF_MM_KC + C.DF_MM_MC*p
			t.nphase, t.rows[0], t.chunk[0] = 1, w.Rows, b.mmChunk(w.Rows)
			b.pool.run(t)
			b.tasks.put(t)
			b.bufs.put(xp)
		}
		return
	}
	var xb *[]float32
	if n == 1 && w.DType == MXFP4 {
		xb = b.bufs.get(w.Cols)
		b.mxLayout(*xb, x[:w.Cols])
		x = *xb
	}
	t := b.tasks.getFor(b.isa, &b.bufs, fastExec)
	t.op, t.w, t.x, t.dst, t.n = opMatMul, w, x, dst, n
	if n > 1 {
		t.scratchLen = w.Cols
	}
	t.nphase, t.rows[0], t.chunk[0] = 1, w.Rows, b.chunkRows(w, n)
	b.pool.run(t)
	b.tasks.put(t)
	b.bufs.put(xb)
}

// ExpertFFN runs as one pool task of two phases, so that the helpers are
// woken once per expert and W2's rows start the moment the last row of the
// activation is done: W1 and W3 (row by row, with the activation), then W2
// over g in W2's x layout (prepared by whoever finishes the first phase).
func (b *fastBackend) ExpertFFN(dst []float32, e Expert, act Activation, x []float32, n int) {
	mustValid(e.W1)
	mustValid(e.W2)
	mustValid(e.W3)
	checkFFN(dst, e, x, n)
	inter, dim := e.W1.Rows, e.W1.Cols
	if n <= 0 {
		return
	}
	if b.blocked(n) && e.W1.DType == e.W3.DType {
		for t0 := 0; t0 < n; t0 += mmSlab {
			m := min(mmSlab, n-t0)
			b.expertFFNBlocked(dst[t0*dim:], e, act, x[t0*dim:], m)
		}
		return
	}
	gb, ub := b.bufs.get(n*inter), b.bufs.get(n*inter)
	g, u := *gb, *ub
	if e.W1.DType != e.W3.DType {
		// The fused pass shares one x layout between W1 and W3; mixed
		// types (never in K3) take three plain passes.
		b.MatMul(g, e.W1, x, n)
		b.MatMul(u, e.W3, x, n)
		for i := range g {
			g[i] = act.Apply(g[i], u[i])
		}
		b.MatMul(dst, e.W2, g, n)
		b.bufs.put(gb, ub)
		return
	}
	var xb, gxb *[]float32
	if n == 1 && e.W1.DType == MXFP4 {
		xb = b.bufs.get(dim)
		b.mxLayout(*xb, x[:dim])
		x = *xb
	}
	t := b.tasks.getFor(b.isa, &b.bufs, fastExec)
	t.op, t.w, t.w3, t.w2, t.x, t.dst, t.g, t.u, t.n, t.act = opFFN, e.W1, e.W3, e.W2, x, dst, g, u, n, act
	t.gx = g
	if n == 1 && e.W2.DType == MXFP4 {
		gxb = b.bufs.get(inter)
		t.gx = *gxb
		t.between = fastLayoutG
	}
	if n > 1 {
		t.scratchLen = max(dim, inter)
	}
	t.nphase = 2
	t.rows[0], t.chunk[0] = inter, b.chunkRows(e.W1, 2*n)
	t.rows[1], t.chunk[1] = dim, b.chunkRows(e.W2, n)
	b.pool.run(t)
	b.tasks.put(t)
	b.bufs.put(xb, gxb, gb, ub)
}

// expertFFNBlocked is ExpertFFN over n ≥ mmMinPositions positions: x
// packed once, phase 0 writes act(W1·x, W3·x) straight into W2's packed
// x layout, phase 1 runs W2 over it.
func (b *fastBackend) expertFFNBlocked(dst []float32, e Expert, act Activation, x []float32, n int) {
	inter, dim := e.W1.Rows, e.W1.Cols
	xp, p := b.packed(x, dim, n)
	gp := b.bufs.get(p * inter)
	t := b.tasks.getFor(b.isa, &b.bufs, fastExec)
	t.op, t.w, t.w3, t.w2, t.x, t.dst, t.gx, t.n, t.act = opFFNBlocked, e.W1, e.W3, e.W2, *xp, dst, *gp, n, act
	t.scratchLen = C.DF_MM_MC*C.DF_MM_KC + 2*C.DF_MM_MC*p
	t.nphase = 2
	t.rows[0], t.chunk[0] = inter, b.mmChunk(inter)
	t.rows[1], t.chunk[1] = dim, b.mmChunk(dim)
	b.pool.run(t)
	b.tasks.put(t)
	b.bufs.put(xp, gp)
}

// chunkRows picks the rows of one chunk, the unit of claiming: about 32 KiB
// of weights, a few microseconds of memory traffic per core. A phase ends
// when its last chunk does, and the others wait for it, so the unit is
// small; owners claim ownBatch of them at a time while their part is long
// (pool.go), which keeps the claims and cgo calls to one per ~64 KiB.
// Measured on a 16-core Xeon (MXFP4 matvec 3072×3584, chunk × chunks per
// owner claim, interleaved): 32 KiB × 2 88 GB/s, 64 KiB × 1 89, 16 KiB × 4
// 85, 8 KiB × 8 77. At least 4 chunks per thread so a slow core does not
// hold the others up.
func (b *fastBackend) chunkRows(w Matrix, n int) int {
	if b.threads == 1 {
		return w.Rows
	}
	rowBytes := max(w.Cols*bitsPerElem(w.DType)/8, 1) * max(n, 1)
	c := max((32<<10)/rowBytes, 1)
	perThread := (w.Rows + 4*b.threads - 1) / (4 * b.threads)
	return max(min(c, perThread), 1)
}

func bitsPerElem(d DType) int {
	switch d {
	case F32:
		return 32
	case BF16, F16:
		return 16
	case I8:
		return 8
	}
	return 4
}

const (
	opMatMul uint8 = iota
	opFFN
	opFFNs // several experts, one position each (experts_fast.go)
	opMatMulBlocked
	opFFNBlocked
)

// fastLayoutG lays out the FFN's g for W2's MXFP4 matvec.
func fastLayoutG(t *task) {
	C.df_mx_layout(C.int(t.isa), floatPtr(t.g), C.int64_t(len(t.g)), floatPtr(t.gx))
}

// fastExec runs rows [lo, hi) of phase ph of t in C.
func fastExec(t *task, ph, lo, hi int, scratch []float32) {
	var sp *C.float
	if len(scratch) > 0 {
		sp = (*C.float)(unsafe.Pointer(&scratch[0]))
	}
	switch {
	case t.op == opFFNs:
		execExperts(t, ph, lo, hi)
	case t.op == opMatMul:
		matRows(t.isa, t.w, t.x, t.n, t.dst, lo, hi, sp)
	case t.op == opMatMulBlocked:
		mmRows(t.isa, t.w, t.x, t.n, t.dst, lo, hi, sp)
	case t.op == opFFNBlocked && ph == 0:
		C.df_mm_ffn_up(C.int(t.isa), C.int(t.w.DType), bytePtr(t.w.Data), bytePtr(t.w.Scales),
			bytePtr(t.w3.Data), bytePtr(t.w3.Scales), C.int64_t(t.w.Rows), C.int64_t(t.w.Cols),
			C.int64_t(lo), C.int64_t(hi), floatPtr(t.x), C.int64_t(t.n), floatPtr(t.gx), sp,
			C.int(t.act.Kind), C.float(t.act.Beta), C.float(t.act.LinearBeta))
	case t.op == opFFNBlocked:
		mmRows(t.isa, t.w2, t.gx, t.n, t.dst, lo, hi, sp)
	case ph == 0: // opFFN: W1, W3 and the activation
		upRows(t.isa, t.w, t.w3, t.act, t.x, t.n, t.g, t.u, lo, hi, sp)
	default: // opFFN: W2
		matRows(t.isa, t.w2, t.gx, t.n, t.dst, lo, hi, sp)
	}
}

// matRows computes rows [lo, hi) of w over n positions of x into dst
// (position-major, w.Rows apart), in C.
func matRows(isa int, w Matrix, x []float32, n int, dst []float32, lo, hi int, scratch *C.float) {
	C.df_matmul_rows(C.int(isa), C.int(w.DType), bytePtr(w.Data), bytePtr(w.Scales),
		C.int64_t(w.Cols), C.int64_t(lo), C.int64_t(hi), floatPtr(x), C.int64_t(n),
		floatPtr(dst), C.int64_t(w.Rows), scratch)
}

// mmRows is matRows for the blocked kernels, over x packed.
func mmRows(isa int, w Matrix, xp []float32, n int, dst []float32, lo, hi int, scratch *C.float) {
	C.df_mm_rows(C.int(isa), C.int(w.DType), bytePtr(w.Data), bytePtr(w.Scales), C.int64_t(w.Cols),
		C.int64_t(lo), C.int64_t(hi), floatPtr(xp), C.int64_t(n), floatPtr(dst), C.int64_t(w.Rows), scratch)
}

// upRows computes rows [lo, hi) of an expert's first half, g = act(W1·x,
// W3·x) over n positions (u is scratch of g's shape), in C.
func upRows(isa int, w1, w3 Matrix, act Activation, x []float32, n int, g, u []float32, lo, hi int, scratch *C.float) {
	C.df_ffn_up_rows(C.int(isa), C.int(w1.DType), bytePtr(w1.Data), bytePtr(w1.Scales),
		C.int(w3.DType), bytePtr(w3.Data), bytePtr(w3.Scales),
		C.int64_t(w1.Rows), C.int64_t(w1.Cols), C.int64_t(lo), C.int64_t(hi),
		floatPtr(x), C.int64_t(n), floatPtr(g), floatPtr(u), scratch,
		C.int(act.Kind), C.float(act.Beta), C.float(act.LinearBeta))
}

// mxLayout writes x (a multiple of 32 long) in the layout this backend's
// MXFP4 matvec reads (kern.h, df_mx_layout).
func (b *fastBackend) mxLayout(dst, x []float32) {
	C.df_mx_layout(C.int(b.isa), floatPtr(x), C.int64_t(len(x)), floatPtr(dst[:len(x)]))
}

func bytePtr(b []byte) *C.uint8_t {
	if len(b) == 0 {
		return nil
	}
	return (*C.uint8_t)(unsafe.Pointer(&b[0]))
}

func floatPtr(f []float32) *C.float {
	if len(f) == 0 {
		return nil
	}
	return (*C.float)(unsafe.Pointer(&f[0]))
}

// decodeRow widens row r of w with this backend's C decoder (the one MatMul
// uses for n > 1); the tests hold it to DecodeRow bit for bit.
func (b *fastBackend) decodeRow(dst []float32, w Matrix, r int) {
	C.df_decode_row(C.int(b.isa), C.int(w.DType), bytePtr(w.Data), bytePtr(w.Scales), C.int64_t(w.Cols), C.int64_t(r), floatPtr(dst[:w.Cols]))
}

const cgoKernels = true
