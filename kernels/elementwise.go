package kernels

import (
	"fmt"
	"math"
)

// The elementwise exp and sigmoid of the engine's activations (the KDA
// decays e^g, the gates σ(·), the router's scores): float64 math.Exp per
// element was most of the engine's own work beside a prompt's products.
// The SIMD kernels (kern_attn_tmpl.h) take a vector of floats at a time
// through Cephes' expf, the one the short conv's SiLU uses, about 1 ulp;
// the tail goes through the same vector arithmetic, so an element's bits
// depend neither on where the caller's slice starts nor on its length: a
// prompt, a verify pass and decode steps agree on one backend.

// ElemOp is an elementwise function of RunElementwise.
type ElemOp int

const (
	// ElemExp is e^x, for x ≤ 0 (what decays and softmax weights need):
	// 0 below fp32's normal range. Larger x are not guaranteed beyond
	// about 88, where e^x overflows fp32 anyway.
	ElemExp ElemOp = 1
	// ElemSigmoid is σ(x) = 1/(1+e^−x): 0 and 1 at the ends, never NaN
	// for a finite x.
	ElemSigmoid ElemOp = 2
)

func (op ElemOp) String() string {
	switch op {
	case ElemExp:
		return "exp"
	case ElemSigmoid:
		return "sigmoid"
	}
	return fmt.Sprintf("ElemOp(%d)", int(op))
}

// elementwiser is a backend with its own elementwise kernel.
type elementwiser interface {
	elementwise(op ElemOp, dst, x []float32)
}

// RunElementwise sets dst[i] = op(x[i]) for every i of x (dst may be x
// itself), on be's CPU kernel, on the caller's goroutine: routed as
// RunShortConv is (a fast backend's own instruction set, a split
// backend's decode side, the reference twin on ref, this CPU's fastest
// kernel for any other backend). A short dst or an unknown op panics.
func RunElementwise(be Backend, op ElemOp, dst, x []float32) {
	if len(dst) < len(x) || (op != ElemExp && op != ElemSigmoid) {
		panic(fmt.Sprintf("kernels: RunElementwise %v: dst %d x %d", op, len(dst), len(x)))
	}
	if len(x) == 0 {
		return
	}
	if e, ok := be.(elementwiser); ok {
		e.elementwise(op, dst, x)
		return
	}
	elementwiseFastest(op, dst, x)
}

func (refBackend) elementwise(op ElemOp, dst, x []float32) { elementwiseRef(op, dst, x) }

// The split backend's elementwise work runs where its decode steps run,
// as its delta rule and short conv do.
func (s split) elementwise(op ElemOp, dst, x []float32) { RunElementwise(s.decode, op, dst, x) }

// elementwiseRef is the reference twin: float64 math.Exp rounded to fp32,
// the engine's loops as they were, so the ref backend keeps their bits.
func elementwiseRef(op ElemOp, dst, x []float32) {
	if op == ElemExp {
		for i, v := range x {
			dst[i] = float32(math.Exp(float64(v)))
		}
		return
	}
	for i, v := range x {
		dst[i] = float32(1 / (1 + math.Exp(-float64(v))))
	}
}
