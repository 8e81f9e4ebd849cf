package kernels_test

// The CPU backends against the reference, with the generators and
// tolerances of package conformance that the GPU backends are held to too.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/kernels"
	"github.com/deltafin/deltafin/kernels/conformance"
)

func TestMatMulMatchesRefOnRandomShapes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ref := kernels.Ref()
	for _, threads := range []int{1, 3} {
		for _, b := range kernels.FastBackends(t, threads) {
			for _, dt := range kernels.AllDTypes {
				colsList := []int{1, 3, 7, 8, 31, 33, 100, 257}
				if dt == kernels.MXFP4 {
					colsList = []int{32, 64, 96, 224, 384, 512}
				}
				for _, rows := range []int{1, 3, 7, 13, 65} {
					for _, cols := range colsList {
						for _, n := range []int{1, 2, 3, 7} {
							name := fmt.Sprintf("%s/t%d/%s/%dx%d/n%d", b.Name(), threads, dt, rows, cols, n)
							t.Run(name, func(t *testing.T) {
								w := conformance.RandMatrix(rng, dt, rows, cols)
								require.NoError(t, w.Validate())
								x := conformance.RandVec(rng, n*cols)
								want := make([]float32, n*rows)
								got := make([]float32, n*rows)
								ref.MatMul(want, w, x, n)
								b.MatMul(got, w, x, n)
								requireClose(t, want, got, conformance.AbsDot(w, x, n), cols, name)
							})
						}
					}
				}
			}
		}
	}
}

// TestMatVecMatchesRefOnK3Shapes runs the real projection shapes: KDA q/k/v/g
// (12288×7168), the routed experts' w1/w3 (3072×3584) and w2 (3584×3072), and
// lm_head (163840×7168, all rows only without -short: 2.3 GB of BF16).
func TestMatVecMatchesRefOnK3Shapes(t *testing.T) {
	headRows := 163840
	if testing.Short() {
		headRows = 4099
	}
	cases := []struct {
		dt         kernels.DType
		rows, cols int
	}{
		{kernels.BF16, 12288, 7168},
		{kernels.I8, 12288, 7168},
		{kernels.F16, 3584, 3072},
		{kernels.F32, 3072, 3584},
		{kernels.MXFP4, 3072, 3584},
		{kernels.MXFP4, 3584, 3072},
		{kernels.BF16, 3584, 3072},
		{kernels.BF16, headRows, 7168},
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%dx%d", c.dt, c.rows, c.cols), func(t *testing.T) {
			w := conformance.RandMatrix(rng, c.dt, c.rows, c.cols)
			x := conformance.RandVec(rng, c.cols)
			want := make([]float32, c.rows)
			kernels.Ref().MatVec(want, w, x)
			s := conformance.AbsDot(w, x, 1)
			for _, b := range kernels.FastBackends(t, 0) {
				got := make([]float32, c.rows)
				b.MatVec(got, w, x)
				requireClose(t, want, got, s, c.cols, b.Name())
			}
		})
	}
}

// TestMXFP4MatVecEveryScale gives each row one block with a scale code of
// its own, at a position that moves through whole 128-column chunks and the
// 32-column tail: kernels that build scales in the exponent field must take
// the table for 0 (2^-127, subnormal) and 255 (NaN). The weights of those
// blocks are at most 1.5 in magnitude and x is small, so that the
// reference's decoded weights (up to 1.5·2^127) and products stay finite.
// Row 0 has scale 0 everywhere (its result must not be 0), and row 255's
// block meets x > 0 (+Inf per lane, where NaN is wanted, would sum to +Inf).
func TestMXFP4MatVecEveryScale(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	const rows, cols = 256, 416 // 3 chunks of 128 and one group of 32
	w := conformance.RandMatrix(rng, kernels.MXFP4, rows, cols)
	for r := range rows {
		b := r % (cols / 32)
		w.Scales[r*cols/32+b] = byte(r)
		for i := range 16 {
			w.Data[r*cols/2+16*b+i] &= 0xbb // codes 0–3 and 8–11: |e2m1| ≤ 1.5
		}
	}
	clear(w.Scales[:cols/32])
	x := conformance.RandVec(rng, cols)
	for i := range x {
		x[i] *= 1e-3
	}
	nan := 255 % (cols / 32) * 32
	for c := nan; c < nan+32; c++ {
		x[c] = float32(math.Abs(float64(x[c])))
		w.Data[255*cols/2+c/2] = 0x22 // 1.0, 1.0
	}
	want := make([]float32, rows)
	kernels.Ref().MatVec(want, w, x)
	s := conformance.AbsDot(w, x, 1)
	require.True(t, math.IsNaN(float64(want[255])), "ref with scale 255")
	require.NotZero(t, want[0], "ref with scale 0")
	for _, b := range kernels.FastBackends(t, 0) {
		got := make([]float32, rows)
		b.MatVec(got, w, x)
		require.True(t, math.IsNaN(float64(got[255])), "%s with scale 255: %g", b.Name(), got[255])
		require.InEpsilon(t, want[0], got[0], 1e-2, "%s with scale 0", b.Name())
		requireClose(t, want[:255], got[:255], s, cols, b.Name())
	}
}

func TestMatMulPrefillMatchesRefOnK3Shape(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const n = 5
	for _, dt := range []kernels.DType{kernels.BF16, kernels.I8, kernels.MXFP4} {
		t.Run(dt.String(), func(t *testing.T) {
			w := conformance.RandMatrix(rng, dt, 1031, 7168)
			x := conformance.RandVec(rng, n*7168)
			want := make([]float32, n*w.Rows)
			kernels.Ref().MatMul(want, w, x, n)
			s := conformance.AbsDot(w, x, n)
			for _, b := range kernels.FastBackends(t, 0) {
				got := make([]float32, n*w.Rows)
				b.MatMul(got, w, x, n)
				requireClose(t, want, got, s, w.Cols, b.Name())
			}
		})
	}
}

func TestExpertFFNMatchesRef(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	acts := []kernels.Activation{{Kind: kernels.SiLU}, {Kind: kernels.SiTU, Beta: 4, LinearBeta: 25}}
	type shape struct {
		dt         kernels.DType
		inter, dim int
		n          int
	}
	shapes := []shape{
		{kernels.MXFP4, 32, 64, 1}, {kernels.MXFP4, 96, 32, 3}, {kernels.BF16, 7, 13, 1}, {kernels.BF16, 33, 17, 2},
		{kernels.F32, 5, 3, 4}, {kernels.I8, 9, 31, 1},
	}
	if !testing.Short() { // the K3 expert: 17.5 MB, slow under qemu
		shapes = append(shapes, shape{kernels.MXFP4, 3072, 3584, 1}, shape{kernels.MXFP4, 3072, 3584, 3})
	}
	for _, sh := range shapes {
		for _, act := range acts {
			name := fmt.Sprintf("%s/I%d/D%d/n%d/act%d", sh.dt, sh.inter, sh.dim, sh.n, act.Kind)
			t.Run(name, func(t *testing.T) {
				e := kernels.Expert{
					W1: conformance.RandMatrix(rng, sh.dt, sh.inter, sh.dim),
					W2: conformance.RandMatrix(rng, sh.dt, sh.dim, sh.inter),
					W3: conformance.RandMatrix(rng, sh.dt, sh.inter, sh.dim),
				}
				x := conformance.RandVec(rng, sh.n*sh.dim)
				want := make([]float32, sh.n*sh.dim)
				kernels.Ref().ExpertFFN(want, e, act, x, sh.n)
				tol := conformance.FFNTol(e, act, x, sh.n)
				for _, b := range kernels.FastBackends(t, 0) {
					got := make([]float32, sh.n*sh.dim)
					b.ExpertFFN(got, e, act, x, sh.n)
					for i := range want {
						d := math.Abs(float64(want[i]) - float64(got[i]))
						require.LessOrEqualf(t, d, tol[i], "%s %s: element %d: ref %g, fast %g", b.Name(), name, i, want[i], got[i])
					}
				}
			})
		}
	}
}

// Mixed W1/W3 dtypes take the unfused path; it must agree too.
func TestExpertFFNMixedTypes(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	act := kernels.Activation{Kind: kernels.SiTU, Beta: 4, LinearBeta: 25}
	e := kernels.Expert{W1: conformance.RandMatrix(rng, kernels.BF16, 64, 96), W2: conformance.RandMatrix(rng, kernels.MXFP4, 96, 64), W3: conformance.RandMatrix(rng, kernels.MXFP4, 64, 96)}
	x := conformance.RandVec(rng, 2*96)
	want := make([]float32, 2*96)
	kernels.Ref().ExpertFFN(want, e, act, x, 2)
	tol := conformance.FFNTol(e, act, x, 2)
	for _, b := range kernels.FastBackends(t, 0) {
		got := make([]float32, 2*96)
		b.ExpertFFN(got, e, act, x, 2)
		for i := range want {
			require.LessOrEqual(t, math.Abs(float64(want[i])-float64(got[i])), tol[i], "%s element %d", b.Name(), i)
		}
	}
}

func requireClose(t *testing.T, want, got []float32, s []float64, cols int, what string) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		d := math.Abs(float64(want[i]) - float64(got[i]))
		if !(d <= conformance.DotTol(cols, s[i])) { // NaN fails too
			require.Failf(t, "kernels differ", "%s: element %d: ref %g, fast %g, |Δ| %g > tol %g (Σ|w·x| = %g)",
				what, i, want[i], got[i], d, conformance.DotTol(cols, s[i]), s[i])
		}
	}
}
