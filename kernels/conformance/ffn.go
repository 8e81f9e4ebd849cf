package conformance

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/kernels"
)

type ffnCase struct {
	dt         kernels.DType
	inter, dim int
	n          int
	act        kernels.Activation
}

func (c ffnCase) String() string {
	return fmt.Sprintf("%s/I%d/D%d/n%d/act%d", c.dt, c.inter, c.dim, c.n, c.act.Kind)
}

var acts = []kernels.Activation{{Kind: kernels.SiLU}, {Kind: kernels.SiTU, Beta: 4, LinearBeta: 25}}

// checkFFN runs expert e on every backend against the reference, within
// FFNTol.
func checkFFN(t *testing.T, bs []kernels.Backend, e kernels.Expert, act kernels.Activation, x []float32, n int, what string) {
	dim := e.W1.Cols
	want := make([]float32, n*dim)
	kernels.Ref().ExpertFFN(want, e, act, x, n)
	tol := FFNTol(e, act, x, n)
	bits := threadBits{}
	each(t, bs, func(t *testing.T, b kernels.Backend) {
		got := make([]float32, n*dim)
		b.ExpertFFN(got, e, act, x, n)
		RequireWithin(t, want, got, tol, what)
		bits.check(t, b, got)
	})
}

func randExpert(rng *rand.Rand, dt kernels.DType, inter, dim int) kernels.Expert {
	return kernels.Expert{
		W1: RandMatrix(rng, dt, inter, dim),
		W2: RandMatrix(rng, dt, dim, inter),
		W3: RandMatrix(rng, dt, inter, dim),
	}
}

// expertFFN: small shapes of every dtype (11 positions: a GPU tile and a
// part), and K3's routed expert (17.5 MB; not in -short mode; on k3Sized's
// backends) for one and three positions, with SiLU and SiTU.
func expertFFN(t *testing.T, bs []kernels.Backend) {
	type shape struct {
		dt         kernels.DType
		inter, dim int
		n          int
	}
	shapes := []shape{
		{kernels.MXFP4, 32, 64, 1}, {kernels.MXFP4, 96, 32, 3}, {kernels.MXFP4, 64, 128, 11},
		{kernels.BF16, 7, 13, 1}, {kernels.BF16, 33, 17, 2}, {kernels.F32, 5, 3, 4}, {kernels.I8, 9, 31, 1},
		// The blocked kernels: row blocks, tiles and panels with tails.
		{kernels.MXFP4, 64, 128, 8}, {kernels.MXFP4, 96, 160, 65}, {kernels.BF16, 33, 17, 9},
		{kernels.I8, 70, 131, 64}, {kernels.F16, 9, 31, 200}, {kernels.BF16, 131, 257, 23},
	}
	if !testing.Short() {
		shapes = append(shapes, shape{kernels.MXFP4, 3072, 3584, 1}, shape{kernels.MXFP4, 3072, 3584, 3},
			shape{kernels.MXFP4, 3072, 3584, 20})
	}
	var cases []ffnCase
	for _, sh := range shapes {
		for _, act := range acts {
			cases = append(cases, ffnCase{sh.dt, sh.inter, sh.dim, sh.n, act})
		}
	}
	parallel(t, len(cases), 7, func(i int) string { return cases[i].String() }, func(t *testing.T, rng *rand.Rand, i int) {
		c, on := cases[i], bs
		if c.inter == 3072 {
			on = k3Sized(bs)
		}
		checkFFN(t, on, randExpert(rng, c.dt, c.inter, c.dim), c.act, RandVec(rng, c.n*c.dim), c.n, c.String())
	})
}

// expertFFNMixed: W1 and W3 of different dtypes (never in K3) take the
// CPU's unfused path; it must agree too.
func expertFFNMixed(t *testing.T, bs []kernels.Backend) {
	rng := rand.New(rand.NewPCG(9, 10))
	e := kernels.Expert{W1: RandMatrix(rng, kernels.BF16, 64, 96), W2: RandMatrix(rng, kernels.MXFP4, 96, 64), W3: RandMatrix(rng, kernels.MXFP4, 64, 96)}
	checkFFN(t, bs, e, acts[1], RandVec(rng, 2*96), 2, "BF16 W1, MXFP4 W2 and W3")
}

// activationUlps holds the activation (the CPU's vector exp and tanh,
// Cephes' in the shaders: GLSL's exp error grows with |x|) to 16 ulps of
// kernels.Activation.Apply (exp and tanh in double), over 100,032 gate and
// up values log-uniform from 1e-6 to 1e3 in magnitude, both signs, and
// zeros, through an expert whose W1 and W2 are identities and whose W3 is
// a cyclic shift: dst = act(x, shift(x)) exactly, each product having one
// nonzero term. Measured: at most 4 ulps for the AVX2 vector code, 8 for
// libm's expf/tanhf, as three factors each carry their own rounding. Where
// the gate is below about −87 the sigmoid is below 2^−126 and a vector exp
// saturates, so a result below 1e-30 (noise beside any activation that
// matters; FFNTol has the same floor) only has to stay below 1e-30. All
// positions go in one call (the batched path) and the first 8 one by one
// (the decode path).
func activationUlps(t *testing.T, bs []kernels.Backend) {
	const dim, n = 64, 1563
	mat := func(col func(r int) int) kernels.Matrix {
		m := kernels.Matrix{DType: kernels.F32, Rows: dim, Cols: dim, Data: make([]byte, 4*dim*dim)}
		for r := range dim {
			c := col(r)
			m.Data[4*(r*dim+c)+2], m.Data[4*(r*dim+c)+3] = 0x80, 0x3f // 1.0f
		}
		return m
	}
	id := mat(func(r int) int { return r })
	e := kernels.Expert{W1: id, W2: id, W3: mat(func(r int) int { return (r + 1) % dim })}
	rng := rand.New(rand.NewPCG(17, 18))
	x := make([]float32, n*dim)
	for i := range x {
		x[i] = float32(math.Copysign(math.Pow(10, rng.Float64()*9-6), rng.Float64()-0.5))
	}
	x[0] = 0 // a zero gate at (0, 0), a zero up value at (0, 63)
	for _, act := range acts {
		want := make([]float32, n*dim)
		tol := make([]float64, n*dim)
		for i, g := range x {
			p := i / dim * dim
			want[i] = act.Apply(g, x[p+(i-p+1)%dim])
			tol[i] = 16 * ulp(want[i])
			if math.Abs(float64(want[i])) < 1e-30 {
				tol[i] = max(tol[i], 1e-30)
			}
		}
		each(t, bs, func(t *testing.T, b kernels.Backend) {
			got := make([]float32, n*dim)
			b.ExpertFFN(got, e, act, x, n)
			RequireWithin(t, want, got, tol, fmt.Sprintf("act %d, %d positions", act.Kind, n))
			for p := range 8 {
				one := make([]float32, dim)
				b.ExpertFFN(one, e, act, x[p*dim:(p+1)*dim], 1)
				RequireWithin(t, want[p*dim:(p+1)*dim], one, tol[p*dim:(p+1)*dim], fmt.Sprintf("act %d, position %d alone", act.Kind, p))
			}
		})
	}
}

// ulp is the spacing of float32 values at v.
func ulp(v float32) float64 {
	a := math.Abs(float64(v))
	if a < 1.1754944e-38 {
		return math.Ldexp(1, -149)
	}
	_, e := math.Frexp(a)
	return math.Ldexp(1, e-24)
}

// expertsFFN: kernels.ExpertsFFN must give, bit for bit, what ExpertFFN
// gives expert by expert on the same backend (the CPU's one pool call over
// several experts only changes which thread computes a row). Shapes
// include I not a multiple of 128 (the AVX-512 x layout's chunk) and of a
// thread's chunk, so that chunks straddle experts (K3's experts with -tags
// slow); every expert on one input, as in decode (laid out once); experts
// whose shapes differ take the one-by-one path.
func expertsFFN(t *testing.T, bs []kernels.Backend) {
	act := acts[1]
	type shape struct {
		dt         kernels.DType
		inter, dim int
		experts    int
	}
	shapes := []shape{{kernels.MXFP4, 96, 256, 5}, {kernels.MXFP4, 32, 64, 2}, {kernels.BF16, 33, 17, 3}, {kernels.I8, 9, 31, 4}}
	if slow { // 35 s on lavapipe
		shapes = append(shapes, shape{kernels.MXFP4, 3072, 3584, 3})
	}
	oneByOne := func(t *testing.T, b kernels.Backend, es []kernels.Expert, xs [][]float32, what string) {
		want, got := make([][]float32, len(es)), make([][]float32, len(es))
		for i, e := range es {
			want[i] = make([]float32, e.W1.Cols)
			b.ExpertFFN(want[i], e, act, xs[i], 1)
			got[i] = make([]float32, e.W1.Cols)
		}
		kernels.ExpertsFFN(b, got, es, act, xs)
		require.Equal(t, want, got, what)
	}
	parallel(t, len(shapes), 21, func(i int) string {
		sh := shapes[i]
		return fmt.Sprintf("%s/%dx%dx%d", sh.dt, sh.experts, sh.inter, sh.dim)
	}, func(t *testing.T, rng *rand.Rand, i int) {
		sh := shapes[i]
		es, xs, shared := make([]kernels.Expert, sh.experts), make([][]float32, sh.experts), make([][]float32, sh.experts)
		for i := range es {
			es[i] = randExpert(rng, sh.dt, sh.inter, sh.dim)
			xs[i] = RandVec(rng, sh.dim)
		}
		xs[1] = xs[0] // two experts on one input, the rest on their own
		for i := range shared {
			shared[i] = xs[0]
		}
		on := bs
		if sh.inter == 3072 {
			on = k3Sized(bs)
		}
		each(t, on, func(t *testing.T, b kernels.Backend) {
			oneByOne(t, b, es, xs, "inputs of their own")
			oneByOne(t, b, es, shared, "one input")
		})
	})
	t.Run("mixed shapes", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(22, 23))
		mixed := []kernels.Expert{randExpert(rng, kernels.MXFP4, 32, 64), randExpert(rng, kernels.MXFP4, 64, 64)}
		xs := [][]float32{RandVec(rng, 64), RandVec(rng, 64)}
		each(t, bs, func(t *testing.T, b kernels.Backend) { oneByOne(t, b, mixed, xs, "mixed shapes") })
	})
}
