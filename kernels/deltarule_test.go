package kernels_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/kernels"
	"github.com/deltafin/deltafin/kernels/conformance"
)

// TestDeltaRuleConformance holds the delta rule of every CPU backend
// (avx512, avx2, neon, c, and the reference twin itself) to the float64
// oracle, at 1 and 3 threads and one per core (the kernel runs on the
// caller's goroutine: the bits must not move with the threads).
func TestDeltaRuleConformance(t *testing.T) {
	t.Parallel()
	conformance.DeltaRule(t, cpuAtThreads(t)...)
}

// The tolerance is not so loose that a kernel which skipped one row's
// decay in one token, or used the wrong token's β, would pass.
func TestDeltaRuleTolCatchesOneSlip(t *testing.T) {
	t.Parallel()
	for _, c := range []conformance.DeltaRuleCase{{T: 7, D: 128, Heads: 1, Alias: true}, {T: 6, D: 67, Heads: 2, Head: 1}} {
		r := conformance.NewDeltaRule(rand.New(rand.NewPCG(1, 2)), c)
		wo, ws := conformance.DeltaRuleOracle(r)
		to, ts := conformance.DeltaRuleTol(r)
		worst := func(got kernels.DeltaRule) float64 {
			o, s := conformance.DeltaRuleResult(got)
			var w float64
			for i, v := range wo {
				w = max(w, math.Abs(float64(o[i])-v)/to)
			}
			for i, v := range ws {
				w = max(w, math.Abs(float64(s[i])-v)/ts)
			}
			return w
		}
		fresh := func() kernels.DeltaRule {
			b := r
			b.O, b.S0 = make([]float32, len(r.O)), append([]float32(nil), r.S0...)
			b.S = b.S0
			b.Decay, b.Beta = append([]float32(nil), r.Decay...), append([]float32(nil), r.Beta...)
			return b
		}
		good := fresh()
		kernels.RunDeltaRule(kernels.Ref(), good)
		require.Less(t, worst(good), 1.0, "%s: the twin itself", c)

		noDecay := fresh()
		noDecay.Decay[3*c.D+c.D/2] = 1 // token 3, one row not decayed
		kernels.RunDeltaRule(kernels.Ref(), noDecay)
		require.Greater(t, worst(noDecay), 1.0, "%s: a row's decay missed", c)

		beta := fresh()
		beta.Beta[2*c.Heads] = beta.Beta[3*c.Heads] // token 2 with token 3's β
		kernels.RunDeltaRule(kernels.Ref(), beta)
		require.Greater(t, worst(beta), 1.0, "%s: a token's β", c)
	}
}

func TestDeltaRuleBadShapesPanic(t *testing.T) {
	t.Parallel()
	r := kernels.DeltaRule{
		O: make([]float32, 8), Q: make([]float32, 8), K: make([]float32, 8), V: make([]float32, 7),
		Decay: make([]float32, 8), Beta: make([]float32, 2), S0: make([]float32, 16), S: make([]float32, 16),
		T: 2, D: 4, Stride: 4, DecayStride: 4, BetaStride: 1,
	}
	require.Panics(t, func() { kernels.RunDeltaRule(kernels.Ref(), r) })
	r.V = make([]float32, 8)
	r.Stride = 3
	require.Panics(t, func() { kernels.RunDeltaRule(kernels.Ref(), r) })
	r.Stride = 4
	require.NotPanics(t, func() { kernels.RunDeltaRule(kernels.Ref(), r) })
}

// BenchmarkDeltaRule is 256 tokens of one K3 head (D = 128) on every CPU
// backend, fastest first, down to the reference twin, in the same run
// (report the ratio): the engine runs such calls, 64 tokens each, one per
// head and block.
func BenchmarkDeltaRule(b *testing.B) {
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
	conformance.BenchDeltaRule(b, 256, 128, bs...)
}
