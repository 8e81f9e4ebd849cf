package kernels

import "fmt"

// ExpertsFFN computes dst[i] = W2·act(W1·x[i], W3·x[i]) with the weights of
// es[i], one position per expert: the routed experts of an MoE layer in
// decode, bit for bit what ExpertFFN gives one by one. A CPU backend with
// helpers runs them as one call of its pool in two phases (every expert's
// W1/W3 rows, then every W2), so the fixed cost of a call, about 11 µs per
// phase on 16 cores (the helpers' start, the wait for a phase's last chunk;
// see README), is paid twice per layer instead of twice per expert. Other
// backends, and experts that differ in shape or type, run one by one.
func ExpertsFFN(b Backend, dst [][]float32, es []Expert, act Activation, x [][]float32) {
	if len(dst) != len(es) || len(x) != len(es) {
		panic(fmt.Sprintf("kernels: ExpertsFFN: %d experts, %d outputs, %d inputs", len(es), len(dst), len(x)))
	}
	if m, ok := b.(expertsFFNer); ok && m.expertsFFN(dst, es, act, x) {
		return
	}
	for i, e := range es {
		b.ExpertFFN(dst[i], e, act, x[i], 1)
	}
}

// expertsFFNer is a backend that can run several experts as one call; it
// reports false when it cannot (and has then done nothing).
type expertsFFNer interface {
	expertsFFN(dst [][]float32, es []Expert, act Activation, x [][]float32) bool
}

// sameShape reports whether every expert has es[0]'s types and shapes and
// the same type in W1 and W3 (what one fused pass over all of them needs).
func sameShape(es []Expert) bool {
	a := es[0]
	if a.W1.DType != a.W3.DType {
		return false
	}
	same := func(m, n Matrix) bool { return m.DType == n.DType && m.Rows == n.Rows && m.Cols == n.Cols }
	for _, e := range es[1:] {
		if !same(e.W1, a.W1) || !same(e.W2, a.W2) || !same(e.W3, a.W3) {
			return false
		}
	}
	return true
}

// ExpertGroupFFN computes dst[i] = W2·act(W1·x[i], W3·x[i]) with the weights
// of es[i] over the ns[i] positions of x[i] ([ns[i], dim]) and dst[i]
// ([ns[i], dim]): the experts of a prompt's group that one side runs, bit
// for bit what ExpertFFN gives expert by expert. A backend that is an
// ExpertGrouper (a GPU: one submission for all of them, each product one
// dispatch over every expert, so that their tiles fill the device
// together) runs them as one call; any other one by one.
func ExpertGroupFFN(b Backend, dst [][]float32, es []Expert, act Activation, x [][]float32, ns []int) {
	if len(dst) != len(es) || len(x) != len(es) || len(ns) != len(es) {
		panic(fmt.Sprintf("kernels: ExpertGroupFFN: %d experts, %d outputs, %d inputs, %d counts", len(es), len(dst), len(x), len(ns)))
	}
	if g, ok := b.(ExpertGrouper); ok {
		g.ExpertGroupFFN(dst, es, act, x, ns)
		return
	}
	for i, e := range es {
		b.ExpertFFN(dst[i], e, act, x[i], ns[i])
	}
}

// An ExpertGrouper runs several experts, each over its own positions, as
// one call (ExpertGroupFFN, whose contract it keeps).
type ExpertGrouper interface {
	ExpertGroupFFN(dst [][]float32, es []Expert, act Activation, x [][]float32, ns []int)
}
