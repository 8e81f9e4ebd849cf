//go:build cgo && (amd64 || arm64)

package kernels

/*
#include "kern_attn.h"
*/
import "C"

import (
	"context"
	"unsafe"
)

// Attention runs the tiles through the instruction set's C kernel
// (kern_attn_tmpl.h), one cgo call per head × block of query rows, on as
// many goroutines as the backend has threads.
func (b *fastBackend) Attention(ctx context.Context, a Attn) error {
	a.mustShape()
	if a.T == 0 {
		return ctx.Err()
	}
	scratch := int(C.df_attn_scratch(C.int64_t(a.QK), C.int64_t(a.DV)))
	q, k, v, dst := f32p(a.Q), f32p(a.K), f32p(a.V), f32p(a.Dst)
	return runAttention(ctx, a, b.threads, scratch, func(scr []float32, h, i0, i1 int) {
		C.df_attn_block(C.int(b.isa), q, k, v, dst, C.int64_t(a.Past), C.int64_t(a.Heads), C.int64_t(a.QK),
			C.int64_t(a.DV), C.float(a.Scale), C.int64_t(h), C.int64_t(i0), C.int64_t(i1), f32p(scr))
	})
}

func f32p(v []float32) *C.float { return (*C.float)(unsafe.Pointer(unsafe.SliceData(v))) }

// Gemm runs the instruction set's C kernel on the caller's goroutine: the
// products it serves are small (a chunk of the delta rule), and their
// callers already spread heads over the cores.
func (b *fastBackend) Gemm(g Gemm) {
	g.mustShape()
	if g.M == 0 || g.N == 0 {
		return
	}
	acc := C.int(0)
	if g.Acc {
		acc = 1
	}
	C.df_gemm(C.int(b.isa), C.int64_t(g.M), C.int64_t(g.K), C.int64_t(g.N), f32p(g.A), C.int64_t(g.LDA),
		f32p(g.B), C.int64_t(g.LDB), f32p(g.C), C.int64_t(g.LDC), acc)
}

// deltaRule runs the instruction set's C kernel on the caller's goroutine:
// one head, whose callers (the engine's KDA layer) spread the heads over
// the cores.
func (b *fastBackend) deltaRule(r DeltaRule) { deltaRuleC(b.isa, r) }

// deltaRuleFastest is the C kernel of this CPU's fastest instruction set.
func deltaRuleFastest(r DeltaRule) { deltaRuleC(fastISAs()[0].isa, r) }

func deltaRuleC(isa int, r DeltaRule) {
	C.df_delta_rule(C.int(isa), f32p(r.O), f32p(r.Q), f32p(r.K), f32p(r.V), f32p(r.Decay), f32p(r.Beta),
		f32p(r.S0), f32p(r.S), C.int64_t(r.T), C.int64_t(r.D), C.int64_t(r.Stride), C.int64_t(r.DecayStride),
		C.int64_t(r.BetaStride))
}

// shortConv runs the instruction set's C kernel on the caller's
// goroutine: the engine spreads the channels over the cores.
func (b *fastBackend) shortConv(c ShortConv) { shortConvC(b.isa, c) }

// shortConvFastest is the C kernel of this CPU's fastest instruction set.
func shortConvFastest(c ShortConv) { shortConvC(fastISAs()[0].isa, c) }

func shortConvC(isa int, c ShortConv) {
	C.df_short_conv(C.int(isa), f32p(c.Y), f32p(c.X), f32p(c.W), f32p(c.State), C.int64_t(c.T), C.int64_t(c.P),
		C.int64_t(c.K), C.int64_t(c.C0), C.int64_t(c.C1))
}

// elementwise runs the instruction set's C kernel on the caller's
// goroutine: the engine calls it on rows it has already spread over the
// cores.
func (b *fastBackend) elementwise(op ElemOp, dst, x []float32) { elementwiseC(b.isa, op, dst, x) }

// elementwiseFastest is the C kernel of this CPU's fastest instruction set.
func elementwiseFastest(op ElemOp, dst, x []float32) { elementwiseC(fastISAs()[0].isa, op, dst, x) }

func elementwiseC(isa int, op ElemOp, dst, x []float32) {
	C.df_elementwise(C.int(isa), C.int(op), f32p(dst), f32p(x), C.int64_t(len(x)))
}
