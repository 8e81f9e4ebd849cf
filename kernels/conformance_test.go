package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

var allDTypes = []DType{F32, BF16, F16, I8, MXFP4}

func TestMatMulMatchesRefOnRandomShapes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ref := Ref()
	for _, threads := range []int{1, 3} {
		for _, b := range fastBackends(t, threads) {
			for _, dt := range allDTypes {
				colsList := []int{1, 3, 7, 8, 31, 33, 100, 257}
				if dt == MXFP4 {
					colsList = []int{32, 64, 96, 224, 512}
				}
				for _, rows := range []int{1, 3, 7, 13, 65} {
					for _, cols := range colsList {
						for _, n := range []int{1, 2, 3, 7} {
							name := fmt.Sprintf("%s/t%d/%s/%dx%d/n%d", b.Name(), threads, dt, rows, cols, n)
							t.Run(name, func(t *testing.T) {
								w := randMatrix(rng, dt, rows, cols)
								require.NoError(t, w.Validate())
								x := randVec(rng, n*cols)
								want := make([]float32, n*rows)
								got := make([]float32, n*rows)
								ref.MatMul(want, w, x, n)
								b.MatMul(got, w, x, n)
								requireClose(t, want, got, absDot(w, x, n), cols, name)
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
		dt         DType
		rows, cols int
	}{
		{BF16, 12288, 7168},
		{I8, 12288, 7168},
		{F16, 3584, 3072},
		{F32, 3072, 3584},
		{MXFP4, 3072, 3584},
		{MXFP4, 3584, 3072},
		{BF16, 3584, 3072},
		{BF16, headRows, 7168},
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%dx%d", c.dt, c.rows, c.cols), func(t *testing.T) {
			w := randMatrix(rng, c.dt, c.rows, c.cols)
			x := randVec(rng, c.cols)
			want := make([]float32, c.rows)
			Ref().MatVec(want, w, x)
			s := absDot(w, x, 1)
			for _, b := range fastBackends(t, 0) {
				got := make([]float32, c.rows)
				b.MatVec(got, w, x)
				requireClose(t, want, got, s, c.cols, b.Name())
			}
		})
	}
}

func TestMatMulPrefillMatchesRefOnK3Shape(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const n = 5
	for _, dt := range []DType{BF16, I8, MXFP4} {
		t.Run(dt.String(), func(t *testing.T) {
			w := randMatrix(rng, dt, 1031, 7168)
			x := randVec(rng, n*7168)
			want := make([]float32, n*w.Rows)
			Ref().MatMul(want, w, x, n)
			s := absDot(w, x, n)
			for _, b := range fastBackends(t, 0) {
				got := make([]float32, n*w.Rows)
				b.MatMul(got, w, x, n)
				requireClose(t, want, got, s, w.Cols, b.Name())
			}
		})
	}
}

// ffnTol bounds |fast − ref| of ExpertFFN elementwise. The two gate/up dot
// products of intermediate row i may each be off by dotTol; the error
// carries through the activation with its partial derivatives (bounded
// below), plus a few ulps for exp/tanh; then W2 adds its own dotTol and the
// intermediate errors weighted by |W2|.
func ffnTol(e Expert, act Activation, x []float32, n int) []float64 {
	inter, dim := e.W1.Rows, e.W1.Cols
	g := make([]float32, n*inter)
	up := make([]float32, n*inter)
	Ref().MatMul(g, e.W1, x, n)
	Ref().MatMul(up, e.W3, x, n)
	sg, su := absDot(e.W1, x, n), absDot(e.W3, x, n)
	h := make([]float32, n*inter)
	dh := make([]float64, n*inter)
	for i := range h {
		h[i] = act.Apply(g[i], up[i])
		gv, uv := float64(g[i]), float64(up[i])
		sig := 1 / (1 + math.Exp(-gv))
		var lg, lu float64 // |∂act/∂g|, |∂act/∂u| bounds
		switch act.Kind {
		case SiTU:
			b, bl := float64(act.Beta), float64(act.LinearBeta)
			capU := math.Abs(bl * math.Tanh(uv/bl))
			lg = capU * (1 + b/4)
			lu = math.Abs(b * math.Tanh(gv/b) * sig)
		default:
			lg = 1.1 * math.Abs(uv)
			lu = math.Abs(gv * sig)
		}
		dh[i] = 2*(lg*dotTol(dim, sg[i])+lu*dotTol(dim, su[i])) + 16*u*math.Abs(float64(h[i])) + 1e-30
	}
	s2 := absDot(e.W2, h, n)
	tol := make([]float64, n*dim)
	row := make([]float32, inter)
	for d := range dim {
		DecodeRow(row, e.W2, d)
		for t := range n {
			var prop float64
			for c, v := range row {
				prop += math.Abs(float64(v)) * dh[t*inter+c]
			}
			tol[t*dim+d] = dotTol(inter, s2[t*dim+d]) + prop
		}
	}
	return tol
}

func TestExpertFFNMatchesRef(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	acts := []Activation{{Kind: SiLU}, {Kind: SiTU, Beta: 4, LinearBeta: 25}}
	type shape struct {
		dt         DType
		inter, dim int
		n          int
	}
	shapes := []shape{
		{MXFP4, 32, 64, 1}, {MXFP4, 96, 32, 3}, {BF16, 7, 13, 1}, {BF16, 33, 17, 2},
		{F32, 5, 3, 4}, {I8, 9, 31, 1},
	}
	if !testing.Short() { // the K3 expert: 17.5 MB, slow under qemu
		shapes = append(shapes, shape{MXFP4, 3072, 3584, 1}, shape{MXFP4, 3072, 3584, 3})
	}
	for _, sh := range shapes {
		for _, act := range acts {
			name := fmt.Sprintf("%s/I%d/D%d/n%d/act%d", sh.dt, sh.inter, sh.dim, sh.n, act.Kind)
			t.Run(name, func(t *testing.T) {
				e := Expert{
					W1: randMatrix(rng, sh.dt, sh.inter, sh.dim),
					W2: randMatrix(rng, sh.dt, sh.dim, sh.inter),
					W3: randMatrix(rng, sh.dt, sh.inter, sh.dim),
				}
				x := randVec(rng, sh.n*sh.dim)
				want := make([]float32, sh.n*sh.dim)
				Ref().ExpertFFN(want, e, act, x, sh.n)
				tol := ffnTol(e, act, x, sh.n)
				for _, b := range fastBackends(t, 0) {
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
	act := Activation{Kind: SiTU, Beta: 4, LinearBeta: 25}
	e := Expert{W1: randMatrix(rng, BF16, 64, 96), W2: randMatrix(rng, MXFP4, 96, 64), W3: randMatrix(rng, MXFP4, 64, 96)}
	x := randVec(rng, 2*96)
	want := make([]float32, 2*96)
	Ref().ExpertFFN(want, e, act, x, 2)
	tol := ffnTol(e, act, x, 2)
	for _, b := range fastBackends(t, 0) {
		got := make([]float32, 2*96)
		b.ExpertFFN(got, e, act, x, 2)
		for i := range want {
			require.LessOrEqual(t, math.Abs(float64(want[i])-float64(got[i])), tol[i], "%s element %d", b.Name(), i)
		}
	}
}

// TestActivationUlps holds each backend's activation to 16 ulps of the
// reference (Activation.Apply, exp and tanh in double; measured here: at
// most 4 ulps for the AVX2 vector code, 8 for libm's expf/tanhf, as three
// factors each carry their own rounding) over the range real
// gate and up values take. Where the gate is below about −87 the sigmoid is
// below 2^−126 and the vector exp saturates, so a result below 1e-30 (noise
// beside any activation that matters; ffnTol has the same floor) only has
// to stay below 1e-30.
func TestActivationUlps(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	const n = 100003
	g, u := make([]float32, n), make([]float32, n)
	for i := range g {
		// Log-uniform magnitudes from 1e-6 to 1e3, both signs, and zeros.
		g[i] = float32(math.Copysign(math.Pow(10, rng.Float64()*9-6), rng.Float64()-0.5))
		u[i] = float32(math.Copysign(math.Pow(10, rng.Float64()*9-6), rng.Float64()-0.5))
	}
	g[0], u[1] = 0, 0
	for _, act := range []Activation{{Kind: SiLU}, {Kind: SiTU, Beta: 4, LinearBeta: 25}} {
		for _, b := range fastBackends(t, 1) {
			got := append([]float32(nil), g...)
			b.(*fastBackend).applyAct(act, got, u)
			for i := range g {
				want := act.Apply(g[i], u[i])
				d := math.Abs(float64(want) - float64(got[i]))
				tol := 16 * u32ulp(want)
				if math.Abs(float64(want)) < 1e-30 {
					tol = max(tol, 1e-30)
				}
				require.LessOrEqualf(t, d, tol, "%s act %d g=%g u=%g: want %g got %g", b.Name(), act.Kind, g[i], u[i], want, got[i])
			}
		}
	}
}

// u32ulp is the spacing of float32 values at v.
func u32ulp(v float32) float64 {
	a := math.Abs(float64(v))
	if a < 1.1754944e-38 {
		return math.Ldexp(1, -149)
	}
	_, e := math.Frexp(a)
	return math.Ldexp(1, e-24)
}
