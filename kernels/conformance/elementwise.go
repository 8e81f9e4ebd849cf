package conformance

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/kernels"
)

// ElementwiseCase is one call of kernels.RunElementwise: N inputs normal
// of standard deviation Scale (for ElemExp their negated magnitudes: the
// decays' and softmax's x ≤ 0), the edges of fp32's range appended.
type ElementwiseCase struct {
	Op    kernels.ElemOp
	N     int
	Scale float64
}

func (c ElementwiseCase) String() string { return fmt.Sprintf("%v/n%d/x%g", c.Op, c.N, c.Scale) }

// ElementwiseCases are lengths with a vector tail on every instruction
// set (1, 5, 37, 1001) or none (16, 128, K3's 12288 gates of a token), at
// scales from the gates' (1) to past σ's saturation and e^x's underflow
// (100).
func ElementwiseCases() []ElementwiseCase {
	var cs []ElementwiseCase
	for _, op := range []kernels.ElemOp{kernels.ElemExp, kernels.ElemSigmoid} {
		for _, n := range []int{1, 5, 16, 37, 128, 1001, 12288} {
			cs = append(cs, ElementwiseCase{Op: op, N: n, Scale: 1})
		}
		cs = append(cs, ElementwiseCase{Op: op, N: 1001, Scale: 10}, ElementwiseCase{Op: op, N: 37, Scale: 100})
	}
	return cs
}

// NewElementwise is a case's inputs: N normal values, then 0, ±1e-8 and
// the ends of fp32's exp range (−87.3, −88, −104, −200, and their
// negations for σ).
func NewElementwise(rng *rand.Rand, c ElementwiseCase) []float32 {
	x := RandVec(rng, c.N)
	for i := range x {
		x[i] *= float32(c.Scale)
		if c.Op == kernels.ElemExp {
			x[i] = -float32(math.Abs(float64(x[i])))
		}
	}
	for _, v := range []float32{0, -1e-8, -87.3, -87.5, -88, -104, -200} {
		x = append(x, v)
		if c.Op == kernels.ElemSigmoid {
			x = append(x, -v)
		}
	}
	return x
}

// ElementwiseOracle is op in float64 from the same fp32 inputs.
func ElementwiseOracle(op kernels.ElemOp, x []float32) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		if op == kernels.ElemExp {
			y[i] = math.Exp(float64(v))
		} else {
			y[i] = 1 / (1 + math.Exp(-float64(v)))
		}
	}
	return y
}

// ElementwiseTol is per element 8·U of the value plus fp32's smallest
// normal: Cephes' expf is about 1 ulp and σ's division and sum add one
// each, well inside 8 (a polynomial term off, or the wrong ln 2 split, is
// thousands of ulp); values below the normal range may flush to 0.
func ElementwiseTol(want []float64) []float64 {
	tol := make([]float64, len(want))
	for i, w := range want {
		tol[i] = 8*U*math.Abs(w) + 0x1p-126
	}
	return tol
}

// Elementwise holds kernels.RunElementwise on every backend to the float64
// oracle within ElementwiseTol, and checks that no output is NaN, that
// the call leaves dst past len(x) alone, that it runs in place, that
// backends of one name give the same bits whatever their threads, and
// that the inputs in pieces at odd offsets (a worker's rows, a decode
// step's one row) give the bits of one call over all of them.
func Elementwise(t *testing.T, bs ...kernels.Backend) {
	t.Helper()
	require.NotEmpty(t, bs)
	for i, cs := range ElementwiseCases() {
		t.Run(cs.String(), func(t *testing.T) {
			x := NewElementwise(rand.New(rand.NewPCG(41, uint64(i))), cs)
			want := ElementwiseOracle(cs.Op, x)
			tol := ElementwiseTol(want)
			bits := map[string][]float32{}
			for _, b := range bs {
				got := make([]float32, len(x)+1)
				got[len(x)] = 7
				kernels.RunElementwise(b, cs.Op, got, x)
				require.Equal(t, float32(7), got[len(x)], "%s: wrote past len(x)", label(b))
				got = got[:len(x)]
				for _, v := range got {
					require.False(t, math.IsNaN(float64(v)), "%s: NaN", label(b))
				}
				RequireWithin(t, toF32(want), got, tol, label(b))
				t.Logf("%s: worst |Δ|/tol %.3g", label(b), worstRatio(toF32(want), got, tol))
				if prev, ok := bits[b.Name()]; ok {
					require.Equal(t, prev, got, "%s: the bits depend on the threads", label(b))
				}
				bits[b.Name()] = got

				inPlace := append([]float32(nil), x...)
				kernels.RunElementwise(b, cs.Op, inPlace, inPlace)
				require.Equal(t, got, inPlace, "%s: in place", label(b))
				pieces := make([]float32, len(x))
				for lo := 0; lo < len(x); {
					hi := min(len(x), lo+1+(lo*7+3)%23)
					kernels.RunElementwise(b, cs.Op, pieces[lo:hi], x[lo:hi])
					lo = hi
				}
				require.Equal(t, got, pieces, "%s: in pieces", label(b))
			}
		})
	}
}

// BenchElementwise times kernels.RunElementwise of op over n floats on
// each backend, in elements per second (G/s).
func BenchElementwise(b *testing.B, op kernels.ElemOp, n int, bs ...kernels.Backend) {
	x := NewElementwise(rand.New(rand.NewPCG(1, 1)), ElementwiseCase{Op: op, N: n, Scale: 1})[:n]
	dst := make([]float32, n)
	for _, be := range bs {
		b.Run(fmt.Sprintf("%s/%v/n%d", label(be), op, n), func(b *testing.B) {
			for b.Loop() {
				kernels.RunElementwise(be, op, dst, x)
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
		})
	}
}
