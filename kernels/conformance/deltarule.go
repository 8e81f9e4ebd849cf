package conformance

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/kernels"
)

// DeltaRuleCase is one shape of kernels.RunDeltaRule: T tokens of a head of
// width D, the head at column offset Head·D of rows of Heads·D (the
// engine's [T, nh, D] layout), the state in place (Alias) or from a kept
// S0 into another buffer (a verify pass).
type DeltaRuleCase struct {
	T, D, Heads, Head int
	Alias             bool
}

func (c DeltaRuleCase) String() string {
	return fmt.Sprintf("T%d/d%d/head%dof%d/alias%v", c.T, c.D, c.Head, c.Heads, c.Alias)
}

// DeltaRuleCases are K3's head width, k3-tiny's and Kimi-Linear's (16,
// 32), and odd widths that leave a partial stripe, a partial vector and
// scalar columns on every instruction set (67 = 64 + 3, 33, 5, 1); the
// long case crosses the engine's 64-token block.
func DeltaRuleCases() []DeltaRuleCase {
	return []DeltaRuleCase{
		{T: 7, D: 128, Heads: 2, Head: 1, Alias: true},
		{T: 7, D: 128, Heads: 2, Head: 0},
		{T: 1, D: 128, Heads: 1, Head: 0, Alias: true},
		{T: 70, D: 16, Heads: 4, Head: 3, Alias: true},
		{T: 9, D: 32, Heads: 3, Head: 1},
		{T: 6, D: 67, Heads: 2, Head: 1, Alias: true},
		{T: 5, D: 33, Heads: 1, Head: 0},
		{T: 4, D: 5, Heads: 3, Head: 2, Alias: true},
		{T: 3, D: 1, Heads: 1, Head: 0},
	}
}

// NewDeltaRule fills a call of shape c with inputs in the engine's ranges:
// q and k of unit norm (q also scaled by D^−½), v standard normal, decay
// exp(g) for g in (−5, 0) (K3's lower bound), β in (0, 1), a state of
// standard normal entries. Beta has a stride of Heads (one per head and
// token), Decay rows their own width D.
func NewDeltaRule(rng *rand.Rand, c DeltaRuleCase) kernels.DeltaRule {
	stride := c.Heads * c.D
	off := c.Head * c.D
	unit := func(scale float64) []float32 {
		x := RandVec(rng, c.T*stride)
		for t := 0; t < c.T; t++ {
			row := x[t*stride+off:][:c.D]
			var n float64
			for _, v := range row {
				n += float64(v) * float64(v)
			}
			f := float32(scale / math.Sqrt(n))
			for i := range row {
				row[i] *= f
			}
		}
		return x[off:]
	}
	r := kernels.DeltaRule{
		Q: unit(1 / math.Sqrt(float64(c.D))), K: unit(1), V: RandVec(rng, c.T*stride)[off:],
		O: make([]float32, c.T*stride)[off:], Decay: make([]float32, c.T*c.D), Beta: make([]float32, c.T*c.Heads)[c.Head:],
		S0: RandVec(rng, c.D*c.D), T: c.T, D: c.D, Stride: stride, DecayStride: c.D, BetaStride: c.Heads,
	}
	for i := range r.Decay {
		r.Decay[i] = float32(math.Exp(-5 * rng.Float64()))
	}
	for t := 0; t < c.T; t++ {
		r.Beta[t*c.Heads] = float32(rng.Float64())
	}
	r.S = r.S0
	if !c.Alias {
		r.S = make([]float32, c.D*c.D)
	}
	return r
}

// clone gives r fresh outputs (and a fresh state, S0 untouched).
func cloneDeltaRule(r kernels.DeltaRule, alias bool) kernels.DeltaRule {
	r.O = make([]float32, len(r.O))
	r.S0 = append([]float32(nil), r.S0...)
	r.S = r.S0
	if !alias {
		r.S = make([]float32, len(r.S0))
	}
	return r
}

// DeltaRuleOracle is the recurrence in float64 from the same fp32 inputs:
// the outputs [T, D] (packed) and the final state.
func DeltaRuleOracle(r kernels.DeltaRule) (o, s []float64) {
	d := r.D
	s = make([]float64, d*d)
	for i := range s {
		s[i] = float64(r.S0[i])
	}
	o = make([]float64, r.T*d)
	delta := make([]float64, d)
	for t := 0; t < r.T; t++ {
		q, k, v := r.Q[t*r.Stride:][:d], r.K[t*r.Stride:][:d], r.V[t*r.Stride:][:d]
		decay := r.Decay[t*r.DecayStride:][:d]
		for j := range delta {
			delta[j] = float64(v[j])
		}
		for i := 0; i < d; i++ {
			for j := 0; j < d; j++ {
				s[i*d+j] *= float64(decay[i])
				delta[j] -= float64(k[i]) * s[i*d+j]
			}
		}
		for j := range delta {
			delta[j] *= float64(r.Beta[t*r.BetaStride])
		}
		for i := 0; i < d; i++ {
			for j := 0; j < d; j++ {
				s[i*d+j] += float64(k[i]) * delta[j]
				o[t*d+j] += float64(q[i]) * s[i*d+j]
			}
		}
	}
	return o, s
}

// DeltaRuleResult is a call's outputs packed [T, D] and its final state,
// as float32, for comparison.
func DeltaRuleResult(r kernels.DeltaRule) (o, s []float32) {
	o = make([]float32, r.T*r.D)
	for t := 0; t < r.T; t++ {
		copy(o[t*r.D:(t+1)*r.D], r.O[t*r.Stride:])
	}
	return o, append([]float32(nil), r.S[:r.D*r.D]...)
}

// DeltaRuleTol is the tolerance of the outputs and of the state: 4·E,
// where E is the largest distance of the reference twin (fp32, one
// rounding per operation) to the float64 oracle in this case, measured
// here. Any fp32 implementation lies within about E of the oracle (a fused
// multiply-add rounds less, a different order as much), so within 2E of
// the twin's error; the second factor of 2 covers elements where the
// twin's error was not the largest. The floor of 8·U times the largest
// magnitude keeps a case where the twin happens to be exact from
// demanding exact bits. Deriving it from the twin's measured error keeps
// it right for any shape while an error in the recurrence (a row's decay
// missed, a token's β), orders of magnitude above rounding, fails it.
func DeltaRuleTol(r kernels.DeltaRule) (to, ts float64) {
	ref := cloneDeltaRule(r, true)
	kernels.RunDeltaRule(kernels.Ref(), ref)
	o, s := DeltaRuleResult(ref)
	wo, ws := DeltaRuleOracle(r)
	e := func(got []float32, want []float64) float64 {
		var worst, mag float64
		for i, w := range want {
			worst = max(worst, math.Abs(float64(got[i])-w))
			mag = max(mag, math.Abs(w))
		}
		return 4 * max(worst, 8*U*mag)
	}
	return e(o, wo), e(s, ws)
}

func toF32(x []float64) []float32 {
	y := make([]float32, len(x))
	for i, v := range x {
		y[i] = float32(v)
	}
	return y
}

func fill(n int, v float64) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = v
	}
	return x
}

// DeltaRule holds kernels.RunDeltaRule on every backend to the float64
// oracle within DeltaRuleTol; checks that S0 is left alone when S is
// another buffer; that backends of one name give the same bits whatever
// their threads; and that the tokens run one call each (the engine's
// decode steps, S in place after the first) give the bits of one call over
// all of them (its prompt), on every backend.
func DeltaRule(t *testing.T, bs ...kernels.Backend) {
	t.Helper()
	require.NotEmpty(t, bs)
	for i, c := range DeltaRuleCases() {
		t.Run(c.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(31, uint64(i)))
			r := NewDeltaRule(rng, c)
			wo, ws := DeltaRuleOracle(r)
			to, ts := DeltaRuleTol(r)
			wantO, wantS := toF32(wo), toF32(ws)
			tolO, tolS := fill(len(wantO), to), fill(len(wantS), ts)
			bits := map[string][]float32{}
			for _, b := range bs {
				got := cloneDeltaRule(r, c.Alias)
				s0 := append([]float32(nil), got.S0...)
				kernels.RunDeltaRule(b, got)
				o, s := DeltaRuleResult(got)
				RequireWithin(t, wantO, o, tolO, label(b)+": o")
				RequireWithin(t, wantS, s, tolS, label(b)+": state")
				if !c.Alias {
					require.Equal(t, s0, got.S0, "%s: S0 written", label(b))
				}
				t.Logf("%s: worst |Δ|/tol o %.3g, state %.3g", label(b), worstRatio(wantO, o, tolO), worstRatio(wantS, s, tolS))
				all := append(o, s...)
				if prev, ok := bits[b.Name()]; ok {
					require.Equal(t, prev, all, "%s: the bits depend on the threads", label(b))
				}
				bits[b.Name()] = all

				step := cloneDeltaRule(r, c.Alias)
				for tt := 0; tt < c.T; tt++ {
					one := step
					one.T = 1
					one.O, one.Q, one.K, one.V = step.O[tt*c.Heads*c.D:], step.Q[tt*c.Heads*c.D:], step.K[tt*c.Heads*c.D:], step.V[tt*c.Heads*c.D:]
					one.Decay, one.Beta = step.Decay[tt*c.D:], step.Beta[tt*c.Heads:]
					if tt > 0 {
						one.S0 = step.S
					}
					kernels.RunDeltaRule(b, one)
				}
				so, ss := DeltaRuleResult(step)
				require.Equal(t, o, so, "%s: token by token, outputs", label(b))
				require.Equal(t, s, ss, "%s: token by token, state", label(b))
			}
		})
	}
	t.Run("Empty", func(t *testing.T) {
		for _, b := range bs {
			s := []float32{7}
			kernels.RunDeltaRule(b, kernels.DeltaRule{S0: []float32{1}, S: s, D: 1, Stride: 1, DecayStride: 1})
			require.Equal(t, []float32{7}, s, "%s: T = 0 wrote S", label(b))
		}
	})
}

// BenchDeltaRule times kernels.RunDeltaRule on each backend over T tokens
// of one head of width D (the first backend against the others in the
// same run). GFLOP/s counts 7·D² per token: the decay (1), δ's
// multiply-add (2), the update's (2) and the output's (2).
func BenchDeltaRule(b *testing.B, T, D int, bs ...kernels.Backend) {
	c := DeltaRuleCase{T: T, D: D, Heads: 1, Alias: true}
	r := NewDeltaRule(rand.New(rand.NewPCG(1, 1)), c)
	s0 := append([]float32(nil), r.S0...)
	flops := 7 * float64(D) * float64(D) * float64(T)
	for _, be := range bs {
		b.Run(fmt.Sprintf("%s/%s", label(be), c), func(b *testing.B) {
			for b.Loop() {
				copy(r.S0, s0) // the same (decaying, bounded) state every run
				kernels.RunDeltaRule(be, r)
			}
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
