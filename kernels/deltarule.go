package kernels

import "fmt"

// The gated delta rule of one linear-attention head (Kimi Delta Attention,
// docs/MODEL.md §5.5) over T tokens, with a state S of D×D, row i of
// which the key channel i scales:
//
//	S[i,:] ← S[i,:] · decay[i]          (decay = exp(g), the caller's)
//	δ      = β · (v − Σ_i k[i] · S[i,:])
//	S[i,:] ← S[i,:] + k[i] · δ
//	o      = Σ_i q[i] · S[i,:]
//
// Every column j of S (a value channel) is its own recurrence: δ[j] and
// o[j] read only column j. The SIMD kernels (kern_attn_tmpl.h) use that to
// run all T tokens on a stripe of columns while it sits in registers and
// L1, one sweep over the stripe's rows per token: the rows' update by one
// token's δ, its output and the next token's decay and δ in one pass.
// Per element, the operations and their order are the same for any T,
// so a prompt run in one call and the same tokens one decode step at a
// time give the same bits on one backend.

// DeltaRule is one head's delta rule over T tokens: token t reads row t
// of Q, K, V [T, D] (at t·Stride), of Decay [T, D] (at t·DecayStride) and
// Beta[t·BetaStride], and writes row t of O. S0 [D, D] (row-major, key
// channel by value channel) is the state before the first token; the state
// after the last is written to S, which is S0 itself (in place) or a
// buffer that does not overlap it (a verify pass keeps S0). T = 0 leaves S
// unwritten.
type DeltaRule struct {
	O, Q, K, V, Decay []float32
	Beta              []float32
	S0, S             []float32
	T, D              int
	// Stride is the distance between tokens' rows of O, Q, K and V:
	// nh·D for one head of a layer's [T, nh, D] activations.
	Stride, DecayStride, BetaStride int
}

// deltaRuler is a backend with its own delta-rule kernel.
type deltaRuler interface {
	deltaRule(r DeltaRule)
}

// RunDeltaRule runs r on be's CPU kernel: a fast backend's own instruction
// set, a split backend's decode side, the reference twin on ref; any other
// backend (a GPU's) gets this CPU's fastest kernel, since the recurrence is
// a few hundred KiB of state per head, touched once a token: no GPU call
// pays for itself on it. Shapes are the caller's contract: a mismatch
// panics.
func RunDeltaRule(be Backend, r DeltaRule) {
	r.mustShape()
	if r.T == 0 || r.D == 0 {
		return
	}
	if dr, ok := be.(deltaRuler); ok {
		dr.deltaRule(r)
		return
	}
	deltaRuleFastest(r)
}

func (r DeltaRule) mustShape() {
	need := func(v []float32, stride int) bool {
		return r.T == 0 || (stride >= 0 && len(v) >= (r.T-1)*stride+r.D)
	}
	ok := r.T >= 0 && r.D >= 0 && r.Stride >= r.D && r.DecayStride >= r.D && r.BetaStride >= 0 &&
		need(r.O, r.Stride) && need(r.Q, r.Stride) && need(r.K, r.Stride) && need(r.V, r.Stride) &&
		need(r.Decay, r.DecayStride) && (r.T == 0 || len(r.Beta) >= (r.T-1)*r.BetaStride+1) &&
		len(r.S0) >= r.D*r.D && len(r.S) >= r.D*r.D
	if !ok {
		panic(fmt.Sprintf("kernels: DeltaRule T %d D %d strides %d/%d/%d: o %d q %d k %d v %d decay %d beta %d s0 %d s %d",
			r.T, r.D, r.Stride, r.DecayStride, r.BetaStride, len(r.O), len(r.Q), len(r.K), len(r.V),
			len(r.Decay), len(r.Beta), len(r.S0), len(r.S)))
	}
}

func (refBackend) deltaRule(r DeltaRule) { deltaRuleRef(r) }

// The split backend's recurrence runs where its decode steps run (the
// CPU), so a prompt, a verify pass and a decode step share one kernel.
func (s split) deltaRule(r DeltaRule) { RunDeltaRule(s.decode, r) }

// deltaRuleRef is the reference twin: the engine's per-token loop as it
// was (one row of S at a time, fp32), what the ref backend and builds
// without cgo run. The conformance suite holds it, like every kernel, to a
// float64 oracle of its own.
func deltaRuleRef(r DeltaRule) {
	d := r.D
	delta := make([]float32, d)
	S0, S := r.S0[:d*d], r.S[:d*d]
	for t := 0; t < r.T; t++ {
		q, k, v := r.Q[t*r.Stride:][:d], r.K[t*r.Stride:][:d], r.V[t*r.Stride:][:d]
		o, decay := r.O[t*r.Stride:][:d], r.Decay[t*r.DecayStride:][:d]
		copy(delta, v)
		for i := 0; i < d; i++ {
			row0, row := S0[i*d:(i+1)*d], S[i*d:(i+1)*d]
			for j := range row {
				row[j] = row0[j] * decay[i]
				delta[j] -= k[i] * row[j]
			}
		}
		bt := r.Beta[t*r.BetaStride]
		for j := range delta {
			delta[j] *= bt
		}
		clear(o)
		for i := 0; i < d; i++ {
			row := S[i*d : (i+1)*d]
			ki, qi := k[i], q[i]
			for j := range row {
				row[j] += ki * delta[j]
				o[j] += qi * row[j]
			}
		}
		S0 = S
	}
}
