//go:build linux && cgo

package vulkan

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/deltafin/deltafin/kernels"
	"github.com/deltafin/deltafin/kernels/conformance"
	"github.com/stretchr/testify/require"
)

// relTol is the tolerance of the layer ops: k·u relative to the largest
// magnitude in the result (each output is a short chain of fp32 operations
// on values of that size, plus the Cephes exp's ulp, summed in a different
// order only in the reductions), and never below 1e-30.
func relTol(want []float32, k float64) []float64 {
	var m float64
	for _, v := range want {
		m = max(m, math.Abs(float64(v)))
	}
	tol := make([]float64, len(want))
	for i := range tol {
		tol[i] = k*conformance.U*m + 1e-30
	}
	return tol
}

func TestRMSNormMatchesRef(t *testing.T) {
	b := device(t)
	rng := rand.New(rand.NewPCG(11, 12))
	for _, width := range []int{1, 7, 64, 513, 7168} {
		for _, rows := range []int{1, 3} {
			for _, weighted := range []bool{false, true} {
				name := fmt.Sprintf("w%d/r%d/weight%v", width, rows, weighted)
				t.Run(name, func(t *testing.T) {
					x := conformance.RandVec(rng, rows*width)
					var w []float32
					if weighted {
						w = conformance.RandVec(rng, width)
					}
					want, got := make([]float32, len(x)), make([]float32, len(x))
					kernels.RefLayerOps().RMSNormRows(want, x, w, 1e-6, width)
					b.RMSNormRows(got, x, w, 1e-6, width)
					// The sum of squares: a tree instead of a line, ≤ u·√width
					// relative; then 1/√ and two products, a few ulps each.
					tol := make([]float64, len(want))
					for i := range want {
						tol[i] = (8 + 4*math.Sqrt(float64(width))) * conformance.U * math.Abs(float64(want[i]))
					}
					requireWithin(t, want, got, tol, name)
				})
			}
		}
	}
	require.NoError(t, b.Err())
}

// kdaInputs makes q, k unit vectors per head (as the engine L2-normalises
// them), β in (0,1), log-decays in (−5, 0) and a state carried from before.
func kdaInputs(rng *rand.Rand, T, nh, d int) (q, k, v, g, beta, s []float32) {
	unit := func(n int) []float32 {
		x := conformance.RandVec(rng, n)
		for o := 0; o < n; o += d {
			var ss float64
			for _, a := range x[o : o+d] {
				ss += float64(a * a)
			}
			for i := o; i < o+d; i++ {
				x[i] /= float32(math.Sqrt(ss))
			}
		}
		return x
	}
	n := T * nh * d
	q, k, v = unit(n), unit(n), conformance.RandVec(rng, n)
	g, beta = make([]float32, n), make([]float32, T*nh)
	for i := range g {
		g[i] = -5 * float32(rng.Float64())
	}
	for i := range beta {
		beta[i] = float32(rng.Float64())
	}
	s = conformance.RandVec(rng, nh*d*d)
	return
}

func TestKDARecurrentMatchesRef(t *testing.T) {
	b := device(t)
	rng := rand.New(rand.NewPCG(13, 14))
	for _, c := range []struct{ T, nh, d int }{{1, 1, 4}, {1, 3, 16}, {5, 2, 32}, {3, 2, 128}} {
		name := fmt.Sprintf("T%d/nh%d/d%d", c.T, c.nh, c.d)
		t.Run(name, func(t *testing.T) {
			q, k, v, g, beta, s := kdaInputs(rng, c.T, c.nh, c.d)
			s2 := append([]float32(nil), s...)
			want, got := make([]float32, len(q)), make([]float32, len(q))
			kernels.RefLayerOps().KDARecurrent(want, q, k, v, g, beta, s, c.T, c.nh, c.d)
			b.KDARecurrent(got, q, k, v, g, beta, s2, c.T, c.nh, c.d)
			// Same operations in the same order; only e^g differs, by an ulp
			// or two, carried through d-long sums over T tokens: 16·√(d·T)
			// ulps of the largest value (measured on lavapipe: 1.9 at
			// d = 128, T = 3, where this allows 314).
			kt := 16 * math.Sqrt(float64(c.d*c.T))
			requireWithin(t, want, got, relTol(want, kt), name+" o")
			requireWithin(t, s, s2, relTol(s, kt), name+" state")
		})
	}
	require.NoError(t, b.Err())
}

func TestAttentionMatchesRef(t *testing.T) {
	b := device(t)
	rng := rand.New(rand.NewPCG(15, 16))
	for _, c := range []struct{ T, nh, qk, dv, past int }{{1, 1, 8, 8, 0}, {1, 4, 24, 16, 37}, {6, 3, 40, 32, 0}, {4, 2, 192, 128, 100}} {
		name := fmt.Sprintf("T%d/nh%d/qk%d/dv%d/past%d", c.T, c.nh, c.qk, c.dv, c.past)
		t.Run(name, func(t *testing.T) {
			L := c.past + c.T
			q := conformance.RandVec(rng, c.T*c.nh*c.qk)
			kc := conformance.RandVec(rng, L*c.nh*c.qk)
			vc := conformance.RandVec(rng, L*c.nh*c.dv)
			scale := float32(1 / math.Sqrt(float64(c.qk)))
			want, got := make([]float32, c.T*c.nh*c.dv), make([]float32, c.T*c.nh*c.dv)
			kernels.RefLayerOps().Attention(want, q, kc, vc, c.T, c.nh, c.qk, c.dv, c.past, scale)
			b.Attention(got, q, kc, vc, c.T, c.nh, c.qk, c.dv, c.past, scale)
			// Scores are the reference's dots; the softmax sum is a tree and
			// e^x is Cephes', so each weight is off by a few ulps; the output
			// sums L of them: 16·√L ulps of the largest value (measured on
			// lavapipe: 4.6 at L = 104, where this allows 163).
			requireWithin(t, want, got, relTol(want, 16*math.Sqrt(float64(L))), name)
		})
	}
	require.NoError(t, b.Err())
}
