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

func init() {
	C.df_init()
	isas := fastISAs()
	best := isas[0].isa
	readBytes = func(b []byte) uint64 { return uint64(C.df_read(C.int(best), bytePtr(b), C.int64_t(len(b)))) }
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
}

func newFast(info isaInfo, threads int) *fastBackend {
	return &fastBackend{name: info.name, isa: info.isa, threads: threads, pool: newPool(threads)}
}

func (b *fastBackend) Name() string { return b.name }

// Threads is the number of goroutines (the caller included) an operation uses.
func (b *fastBackend) Threads() int { return b.threads }

func (b *fastBackend) MatVec(dst []float32, w Matrix, x []float32) { b.MatMul(dst, w, x, 1) }

// mustValid panics unless w's byte slices match its shape: the C kernels
// trust them, and an out-of-bounds read there would not panic but return
// garbage. It costs a few comparisons per call.
func mustValid(w Matrix) {
	if err := w.Validate(); err != nil {
		panic(err.Error())
	}
}

func (b *fastBackend) MatMul(dst []float32, w Matrix, x []float32, n int) {
	mustValid(w)
	checkMatMul(dst, w, x, n)
	if n <= 0 {
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
	b.pool.run(t, w.Rows, b.chunkRows(w, n))
	b.tasks.put(t)
	if xb != nil {
		b.bufs.put(xb)
	}
}

func (b *fastBackend) ExpertFFN(dst []float32, e Expert, act Activation, x []float32, n int) {
	mustValid(e.W1)
	mustValid(e.W2)
	mustValid(e.W3)
	checkFFN(dst, e, x, n)
	inter, dim := e.W1.Rows, e.W1.Cols
	if n <= 0 {
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
	} else {
		var xb *[]float32
		if n == 1 && e.W1.DType == MXFP4 {
			xb = b.bufs.get(dim)
			b.mxLayout(*xb, x[:dim])
			x = *xb
		}
		t := b.tasks.getFor(b.isa, &b.bufs, fastExec)
		t.op, t.w, t.w3, t.x, t.dst, t.u, t.n, t.act = opFFNUp, e.W1, e.W3, x, g, u, n, act
		if n > 1 {
			t.scratchLen = dim
		}
		b.pool.run(t, inter, b.chunkRows(e.W1, 2*n))
		b.tasks.put(t)
		if xb != nil {
			b.bufs.put(xb)
		}
	}
	b.MatMul(dst, e.W2, g, n)
	b.bufs.put(gb)
	b.bufs.put(ub)
}

// chunkRows picks how many rows one worker takes at a time: about 128 KiB of
// weights (a few microseconds of memory traffic, so that the atomic counter
// and the cgo call are noise), but at least 4 chunks per thread so a slow
// core does not hold the others up.
func (b *fastBackend) chunkRows(w Matrix, n int) int {
	if b.threads == 1 {
		return w.Rows
	}
	rowBytes := max(w.Cols*bitsPerElem(w.DType)/8, 1) * max(n, 1)
	c := max((128<<10)/rowBytes, 1)
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
	opFFNUp
)

// fastExec runs rows [lo, hi) of t in C.
func fastExec(t *task, lo, hi int, scratch []float32) {
	var sp *C.float
	if len(scratch) > 0 {
		sp = (*C.float)(unsafe.Pointer(&scratch[0]))
	}
	switch t.op {
	case opMatMul:
		C.df_matmul_rows(C.int(t.isa), C.int(t.w.DType), bytePtr(t.w.Data), bytePtr(t.w.Scales),
			C.int64_t(t.w.Cols), C.int64_t(lo), C.int64_t(hi), floatPtr(t.x), C.int64_t(t.n),
			floatPtr(t.dst), C.int64_t(t.w.Rows), sp)
	case opFFNUp:
		C.df_ffn_up_rows(C.int(t.isa), C.int(t.w.DType), bytePtr(t.w.Data), bytePtr(t.w.Scales),
			C.int(t.w3.DType), bytePtr(t.w3.Data), bytePtr(t.w3.Scales),
			C.int64_t(t.w.Rows), C.int64_t(t.w.Cols), C.int64_t(lo), C.int64_t(hi),
			floatPtr(t.x), C.int64_t(t.n), floatPtr(t.dst), floatPtr(t.u), sp,
			C.int(t.act.Kind), C.float(t.act.Beta), C.float(t.act.LinearBeta))
	}
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

// applyAct sets g[i] = act(g[i], u[i]) with this backend's C activation, the
// one ExpertFFN uses (for the tests).
func (b *fastBackend) applyAct(act Activation, g, u []float32) {
	C.df_act(C.int(b.isa), C.int(act.Kind), C.float(act.Beta), C.float(act.LinearBeta), floatPtr(g), floatPtr(u), C.int64_t(len(g)))
}
