package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

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
