package kernels_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/kernels"
	"github.com/deltafin/deltafin/kernels/conformance"
)

// TestShortConvConformance holds the short conv of every CPU backend
// (avx512, avx2, neon, c, and the reference twin) to the float64 oracle,
// at 1 and 3 threads and one per core.
func TestShortConvConformance(t *testing.T) {
	t.Parallel()
	conformance.ShortConv(t, cpuAtThreads(t)...)
}

// The tolerance is not so loose that a kernel which gave one token the
// window of the token before (one tap off) would pass, at either scale.
func TestShortConvTolCatchesOneSlip(t *testing.T) {
	t.Parallel()
	for _, cs := range []conformance.ShortConvCase{
		{T: 70, P: 37, K: 4, C1: 37, Scale: 1}, {T: 9, P: 128, K: 4, C0: 16, C1: 99, Scale: 50},
	} {
		c := conformance.NewShortConv(rand.New(rand.NewPCG(3, 4)), cs)
		want, _ := conformance.ShortConvOracle(c)
		tol := conformance.ShortConvTol(c)
		worst := func(got kernels.ShortConv) float64 {
			y, _ := conformance.ShortConvResult(got)
			var w float64
			for i, v := range want {
				w = max(w, math.Abs(float64(y[i])-v)/tol)
			}
			return w
		}
		good := c
		good.Y, good.State = make([]float32, len(c.Y)), append([]float32(nil), c.State...)
		kernels.RunShortConv(kernels.Ref(), good)
		require.Less(t, worst(good), 1.0, "%s: the twin itself", cs)

		// Token 5 through the window ending at token 4: its outputs are
		// token 4's.
		slip := good
		slip.Y = append([]float32(nil), good.Y...)
		copy(slip.Y[5*cs.P+cs.C0:5*cs.P+cs.C1], good.Y[4*cs.P+cs.C0:])
		require.Greater(t, worst(slip), 1.0, "%s: one token's window shifted", cs)
	}
}

func TestShortConvBadShapesPanic(t *testing.T) {
	t.Parallel()
	c := kernels.ShortConv{Y: make([]float32, 8), X: make([]float32, 8), W: make([]float32, 16), State: make([]float32, 11), T: 2, P: 4, K: 4, C1: 4}
	require.Panics(t, func() { kernels.RunShortConv(kernels.Ref(), c) })
	c.State = make([]float32, 12)
	c.C1 = 5
	require.Panics(t, func() { kernels.RunShortConv(kernels.Ref(), c) })
	c.C1 = 4
	c.K = 0
	require.Panics(t, func() { kernels.RunShortConv(kernels.Ref(), c) })
	c.K = 4
	require.NotPanics(t, func() { kernels.RunShortConv(kernels.Ref(), c) })
}

// BenchmarkShortConv is 256 tokens of one K3 projection (P = 12288, K = 4)
// on every CPU backend, fastest first, down to the reference twin, in the
// same run (report the ratio); the engine runs three a layer, its
// channels over the cores.
func BenchmarkShortConv(b *testing.B) {
	var bs []kernels.Backend
	for _, name := range kernels.Available() {
		be, err := kernels.ByName(name)
		if err != nil {
			b.Fatal(err)
		}
		if kernels.IsCPU(be) {
			bs = append(bs, be)
		}
	}
	conformance.BenchShortConv(b, 256, 12288, 4, bs...)
}

// TestShortConvSiLUWithinULPs runs K = 1 with unit weights, so that each
// output is silu of its input, over ±120 and the edges: every CPU
// backend's σ within 4 ulp of the float64 form (its vectorised exp within
// 2), saturating to 0 and 1 with no NaN for large |s|.
func TestShortConvSiLUWithinULPs(t *testing.T) {
	t.Parallel()
	var xs []float32
	for v := -120.0; v <= 120; v += 0.000731 {
		xs = append(xs, float32(v))
	}
	xs = append(xs, 1e30, -1e30, float32(math.Inf(1)), 0, float32(math.Copysign(0, -1)), 87.3, -87.3, -87.4, -103, 1e-30, -1e-30)
	n := len(xs)
	ones := make([]float32, n)
	for i := range ones {
		ones[i] = 1
	}
	for _, be := range cpuAtThreads(t) {
		y := make([]float32, n)
		kernels.RunShortConv(be, kernels.ShortConv{Y: y, X: xs, W: ones, T: 1, P: n, K: 1, C1: n})
		var worst float64
		for i, x := range xs {
			want := float32(float64(x) / (1 + math.Exp(-float64(x))))
			require.False(t, math.IsNaN(float64(y[i])), "%s: silu(%g) is NaN", be.Name(), x)
			if math.Abs(float64(want)) < 1e-30 || math.IsInf(float64(want), 0) {
				require.True(t, y[i] == want || math.Abs(float64(y[i])) < 1e-30, "%s: silu(%g) = %g, want %g", be.Name(), x, y[i], want)
				continue
			}
			worst = max(worst, math.Abs(float64(y[i])-float64(want))/(math.Abs(float64(want))*0x1p-23))
		}
		require.LessOrEqual(t, worst, 4.0, "%s: ulp", be.Name())
	}
}
