package kernels_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/kernels"
	"github.com/deltafin/deltafin/kernels/conformance"
)

// ExpertsFFN must give, bit for bit, what ExpertFFN gives expert by expert
// on the same backend: one pool call over several experts only changes
// which thread computes a row. Shapes include I not a multiple of 128 (the
// AVX-512 x layout's chunk) and of a thread's chunk, so that chunks
// straddle experts; experts whose shapes differ take the one-by-one path.
func TestExpertsFFNIsExpertFFNOneByOne(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	act := kernels.Activation{Kind: kernels.SiTU, Beta: 4, LinearBeta: 25}
	type shape struct {
		dt         kernels.DType
		inter, dim int
		experts    int
	}
	shapes := []shape{{kernels.MXFP4, 96, 256, 5}, {kernels.MXFP4, 32, 64, 2}, {kernels.BF16, 33, 17, 3}, {kernels.I8, 9, 31, 4}}
	if !testing.Short() {
		shapes = append(shapes, shape{kernels.MXFP4, 3072, 3584, 3})
	}
	backends := []kernels.Backend{kernels.Ref()}
	for _, threads := range []int{1, 3} {
		backends = append(backends, kernels.FastBackends(t, threads)...)
	}
	for _, sh := range shapes {
		es := make([]kernels.Expert, sh.experts)
		xs := make([][]float32, sh.experts)
		for i := range es {
			es[i] = kernels.Expert{
				W1: conformance.RandMatrix(rng, sh.dt, sh.inter, sh.dim),
				W2: conformance.RandMatrix(rng, sh.dt, sh.dim, sh.inter),
				W3: conformance.RandMatrix(rng, sh.dt, sh.inter, sh.dim),
			}
			xs[i] = conformance.RandVec(rng, sh.dim)
		}
		xs[1] = xs[0] // decode gives every expert the same input
		for _, b := range backends {
			name := fmt.Sprintf("%s/t%d/%s/%dx%dx%d", b.Name(), kernels.Threads(b), sh.dt, sh.experts, sh.inter, sh.dim)
			want, got := make([][]float32, sh.experts), make([][]float32, sh.experts)
			for i, e := range es {
				want[i] = make([]float32, sh.dim)
				b.ExpertFFN(want[i], e, act, xs[i], 1)
				got[i] = make([]float32, sh.dim)
			}
			kernels.ExpertsFFN(b, got, es, act, xs)
			require.Equal(t, want, got, name)
		}
	}
	// Every expert on one input, as in decode (laid out once).
	shared := make([]kernels.Expert, 4)
	sx := conformance.RandVec(rng, 256)
	for i := range shared {
		shared[i] = kernels.Expert{W1: conformance.RandMatrix(rng, kernels.MXFP4, 96, 256),
			W2: conformance.RandMatrix(rng, kernels.MXFP4, 256, 96), W3: conformance.RandMatrix(rng, kernels.MXFP4, 96, 256)}
	}
	for _, b := range kernels.FastBackends(t, 3) {
		want, got, xs := make([][]float32, 4), make([][]float32, 4), make([][]float32, 4)
		for i, e := range shared {
			want[i], got[i], xs[i] = make([]float32, 256), make([]float32, 256), sx
			b.ExpertFFN(want[i], e, act, sx, 1)
		}
		kernels.ExpertsFFN(b, got, shared, act, xs)
		require.Equal(t, want, got, b.Name()+"/shared x")
	}
	// Mixed shapes: one by one, same answer.
	mixed := []kernels.Expert{
		{W1: conformance.RandMatrix(rng, kernels.MXFP4, 32, 64), W2: conformance.RandMatrix(rng, kernels.MXFP4, 64, 32), W3: conformance.RandMatrix(rng, kernels.MXFP4, 32, 64)},
		{W1: conformance.RandMatrix(rng, kernels.MXFP4, 64, 64), W2: conformance.RandMatrix(rng, kernels.MXFP4, 64, 64), W3: conformance.RandMatrix(rng, kernels.MXFP4, 64, 64)},
	}
	x := [][]float32{conformance.RandVec(rng, 64), conformance.RandVec(rng, 64)}
	for _, b := range kernels.FastBackends(t, 3) {
		want, got := [][]float32{make([]float32, 64), make([]float32, 64)}, [][]float32{make([]float32, 64), make([]float32, 64)}
		for i, e := range mixed {
			b.ExpertFFN(want[i], e, act, x[i], 1)
		}
		kernels.ExpertsFFN(b, got, mixed, act, x)
		require.Equal(t, want, got, b.Name())
	}
	require.PanicsWithValue(t, "kernels: ExpertsFFN: 2 experts, 1 outputs, 2 inputs", func() {
		kernels.ExpertsFFN(kernels.Ref(), [][]float32{make([]float32, 64)}, mixed, act, x)
	})
}
