package engine

import (
	"context"
	"math"

	"github.com/deltafin/deltafin/kernels"
)

// Kimi Delta Attention (docs/MODEL.md §5.5): a linear-attention layer
// whose state is, per head, a d×d matrix updated by the gated delta rule with
// a per-channel decay g[h,k] whose rate exp(A_log[h]) is one per head. Notation: T tokens, H hidden, nh heads of width d,
// P = nh·d, K the short-conv width.

type kdaWeights struct {
	qProj, kProj, vProj kernels.Matrix // [P, H]
	qConv, kConv, vConv []float32      // [P, 1, K]: tap K−1 multiplies the current token
	aLog                []float32      // [nh]: one log rate per head (K3's zero padding dropped at load)
	dtBias              []float32      // [P]
	fA, fB              kernels.Matrix // [d, H], [P, d]: decay-gate low rank, no activation between
	bProj               kernels.Matrix // [nh, H]
	gProj               kernels.Matrix // [P, H] full-rank output gate (K3)
	gA, gB              kernels.Matrix // [d, H], [P, d] low-rank output gate (Kimi-Linear)
	oNorm               []float32      // [d]
	oProj               kernels.Matrix // [H, P]
}

// kdaState is one KDA layer's carried state.
type kdaState struct {
	conv [3][]float32 // q, k, v: [P, K−1] last raw (pre-conv) inputs, oldest first
	s    []float32    // [nh, d(K), d(V)] recurrent state
	// vp is what a verify pass (verify.go) keeps to roll the layer back to
	// any of its positions; nil until the first one.
	vp *kdaVerify
}

// kdaVerify is one KDA layer's record of the last verify pass of T
// positions. The pass runs the delta rule out of place, from prevS into
// the session's s, so the state before it survives; rolling back to n
// positions runs the first n steps again from prevS with the same inputs
// (the same arithmetic, so the same bits as n decode steps), and rebuilds
// the conv windows from the windows before the pass and the raw inputs.
// The memory is one more recurrent state per layer (as a two-position
// pass always took) and the pass's activations.
type kdaVerify struct {
	prevS    []float32    // [nh, d, d] the state before the pass
	prevConv [3][]float32 // [P, K−1] the windows before the pass
	raw      [3][]float32 // [T, P] the pass's raw q, k, v projections
	q, k, v  []float32    // [T, P] the recurrence's inputs
	g, b     []float32    // [T, P], [T, nh]
	T        int
}

// beginVerify makes prevS the current state and gives s the spare buffer
// for the pass to write into.
func (st *kdaState) beginVerify(T int) *kdaVerify {
	vp := st.vp
	if vp == nil {
		vp = &kdaVerify{prevS: make([]float32, len(st.s))}
		for i := range vp.prevConv {
			vp.prevConv[i] = make([]float32, len(st.conv[i]))
		}
		st.vp = vp
	}
	vp.prevS, st.s = st.s, vp.prevS
	for i := range st.conv {
		copy(vp.prevConv[i], st.conv[i])
	}
	vp.T = T
	return vp
}

// keep rolls the layer back to the first n positions of the last verify
// pass (n = T keeps it as it is).
// be is the model's backend (kdaHeads says why not a wrapper).
func (st *kdaState) keep(be kernels.Backend, n int, nh, d, K int, heads headSplit) {
	vp := st.vp
	if n >= vp.T {
		return
	}
	P := nh * d
	o := make([]float32, n*P)
	kdaHeads(context.Background(), be, o, vp.q[:n*P], vp.k[:n*P], vp.v[:n*P], vp.g[:n*P], vp.b[:n*nh], vp.prevS, st.s, n, nh, d, heads.workers(n*nh*d*d))
	for i := range st.conv {
		convWindow(st.conv[i], vp.prevConv[i], vp.raw[i][:n*P], P, K)
	}
}

// convWindow sets dst [P, K−1] to the last K−1 raw inputs of each channel
// after x [n, P] followed the window prev.
func convWindow(dst, prev, x []float32, P, K int) {
	n := len(x) / P
	for c := 0; c < P; c++ {
		for i := 0; i < K-1; i++ {
			tt := n - (K - 1) + i // time of window slot i; < 0 is the old window
			if tt >= 0 {
				dst[c*(K-1)+i] = x[tt*P+c]
			} else {
				dst[c*(K-1)+i] = prev[c*(K-1)+K-1+tt]
			}
		}
	}
}

func newKDAState(c *config) *kdaState {
	P := c.KDAHeads * c.KDAHeadDim
	st := &kdaState{s: make([]float32, c.KDAHeads*c.KDAHeadDim*c.KDAHeadDim)}
	for i := range st.conv {
		st.conv[i] = make([]float32, P*(c.ConvSize-1))
	}
	return st
}

// kdaForward runs T tokens through the layer, updating st.
//
//	x: [T, H] (already input-normalised) → out: [T, H]
//
// With verify set (a verify pass, verify.go) the pass keeps in st.vp what
// rolling back to any of its positions takes. The delta rule checks ctx every
// ctxBlock tokens; a cancelled pass returns ctx's error with st torn.
func (m *Model) kdaForward(ctx context.Context, be kernels.Backend, out, x []float32, T int, w *kdaWeights, st *kdaState, verify bool) error {
	c := m.cfg
	nh, d := c.KDAHeads, c.KDAHeadDim
	P := nh * d
	mat := func(wm kernels.Matrix, in []float32) []float32 {
		y := make([]float32, T*wm.Rows)
		if !stopped(ctx) { // once ctx ends the rest is skipped, and its error returned below
			be.MatMul(y, wm, in, T)
		}
		return y
	}
	// Projections, then the causal short conv + SiLU on each of q, k, v.
	var vp *kdaVerify
	src := st.s // the delta rule's state before the pass
	if verify {
		vp = st.beginVerify(T)
		src = vp.prevS
	}
	// The products over x as one call (kernels.MatMulShared: on a GPU, x
	// crosses the bus once): q, k, v, the decay gate's and the output
	// gate's first factors (or the full-rank gate) and β's logits.
	ws := []kernels.Matrix{w.qProj, w.kProj, w.vProj, w.fA, w.bProj, w.gA}
	if c.FullRankGate {
		ws[5] = w.gProj
	}
	ys := make([][]float32, len(ws))
	for i, wm := range ws {
		ys[i] = make([]float32, T*wm.Rows)
	}
	if !stopped(ctx) {
		kernels.MatMulShared(be, ys, ws, x, T)
	}
	// The conv, like the delta rule below, runs on the model's backend:
	// a verify pass's be would hide its kernel.
	q := shortConv(m.backend, ys[0], w.qConv, st.conv[0], P, c.ConvSize)
	k := shortConv(m.backend, ys[1], w.kConv, st.conv[1], P, c.ConvSize)
	v := shortConv(m.backend, ys[2], w.vConv, st.conv[2], P, c.ConvSize)
	g := mat(w.fB, ys[3]) // [T, P] decay-gate pre-activation
	b := ys[4]            // [T, nh] beta logits
	gate := ys[5]         // [T, P] output-gate pre-activation
	if !c.FullRankGate {
		gate = mat(w.gB, gate)
	}

	// Per head: L2-normalise q and k, scale q by d^−½; β = σ(b̃);
	// decay g ∈ (lb, 0) (K3) or −exp(A_log)·softplus(·) (Kimi-Linear), with
	// one exp(A_log[h]) per head in both.
	// Each token is independent: a prompt's tokens are split over the cores.
	// The σ of β and the gates run in the model's backend's elementwise
	// kernel (kernels.RunElementwise), a worker's rows in one call: an
	// element's bits depend neither on the rows nor on T, so a prompt and
	// decode steps agree.
	scale := float32(math.Sqrt(float64(d)))
	decay := kdaDecay(w.aLog)
	parallelHeads(T, m.heads.workers(T*P*8), func(t0, t1 int) {
		for t := t0; t < t1; t++ {
			for h := 0; h < nh; h++ {
				o := t*P + h*d
				l2Normalize(q[o : o+d])
				l2Normalize(k[o : o+d])
				for i := o; i < o+d; i++ {
					q[i] /= scale
				}
			}
		}
		bb := b[t0*nh : t1*nh]
		kernels.RunElementwise(m.backend, kernels.ElemSigmoid, bb, bb)
		kdaGate(m.backend, g[t0*P:t1*P], decay, w.dtBias, c.GateLowerBound, nh, d)
	})

	// The delta rule, in the operation order of each model's reference: for
	// K3 the per-token recurrence for every T (what k3-tiny's reference
	// computes; nothing has run on the real weights yet, docs/MODEL.md);
	// for Kimi-Linear FLA's chunked form for prompts longer than one chunk.
	// Both are the same function of the inputs (kda_test.go). (Issue 33
	// tried the chunked form for K3's prompts: on the 16-core host its
	// small products took 23.5 CPU-seconds of a 4,096-token prefill where
	// the recurrence, then scalar Go, took 18.8, for the same wall time; it
	// now runs in kernels' SIMD delta-rule kernel, kdaHeads.)
	//
	// The recurrence runs on the model's backend, not be: a verify pass's
	// be is rowByRow (spec.go), which would hide the model's delta-rule
	// kernel, and the pass must give the bits of the decode steps.
	rule := m.backend
	o := make([]float32, T*P)
	switch {
	case verify:
		// Token 0 from prevS into s (out of place), the rest in place:
		// each step is the arithmetic of a decode step. The inputs are
		// kept for keep.
		vp.raw, vp.q, vp.k, vp.v, vp.g, vp.b = [3][]float32{ys[0], ys[1], ys[2]}, q, k, v, g, b
		kdaHeads(ctx, rule, o, q, k, v, g, b, src, st.s, T, nh, d, m.heads.workers(T*nh*d*d))
	case c.GateLowerBound == nil && T > kdaChunkSize:
		kdaChunked(ctx, be, o, q, k, v, g, b, st.s, T, nh, d, kdaChunkSize, m.heads)
	default:
		kdaRecurrent(ctx, rule, o, q, k, v, g, b, st.s, T, nh, d, m.heads)
	}
	if err := ctx.Err(); err != nil {
		return err
	}

	// Gated per-head RMSNorm: o_h ← RMSNorm_{o_norm}(o_h) ⊙ σ(gate_h).
	parallelHeads(T*nh, m.heads.workers(T*P*8), func(i0, i1 int) {
		gs := gate[i0*d : i1*d]
		kernels.RunElementwise(m.backend, kernels.ElemSigmoid, gs, gs)
		for i := i0; i < i1; i++ {
			oh := o[i*d : (i+1)*d]
			rmsNorm(oh, oh, w.oNorm, c.Eps)
			for j := range oh {
				oh[j] *= gate[i*d+j]
			}
		}
	})
	be.MatMul(out, w.oProj, o, T)
	return nil
}

// kdaDecay is exp(A_log), computed once per pass rather than per token:
// the per-head decay rate of kdaGate (one entry per head in both K3 and
// Kimi-Linear; weights.go's aLog drops K3's zero padding).
func kdaDecay(aLog []float32) []float32 {
	a := make([]float32, len(aLog))
	for i, v := range aLog {
		a[i] = float32(math.Exp(float64(v)))
	}
	return a
}

// kdaGate turns the decay-gate pre-activation g̃ (whole tokens, [n·nh·d])
// into the log-decay g in place; a = exp(A_log) [nh], one rate per head,
// broadcast over the head's d channels.
//
//	K3 (lower bound lb):  g[h,k] = lb · σ(a[h] · (g̃[h,k] + dt_bias[h,k]))
//	Kimi-Linear:          g[h,k] = −a[h] · softplus(g̃[h,k] + dt_bias[h,k])
//
// K3's σ is be's elementwise kernel, over all the tokens in one call.
func kdaGate(be kernels.Backend, g, a, dtBias []float32, lowerBound *float32, nh, d int) {
	P := nh * d
	for o := 0; o < len(g); o += P {
		gt := g[o : o+P]
		for h := 0; h < nh; h++ {
			for j := 0; j < d; j++ {
				i := h*d + j
				x := gt[i] + dtBias[i]
				if lowerBound != nil {
					gt[i] = a[h] * x
				} else {
					gt[i] = -a[h] * softplus(x)
				}
			}
		}
	}
	if lowerBound != nil {
		kernels.RunElementwise(be, kernels.ElemSigmoid, g, g)
		for i := range g {
			g[i] *= *lowerBound
		}
	}
}

// shortConv is the causal depthwise conv of width K over time, with the
// carried window of the last K−1 raw inputs, followed by SiLU:
//
//	y[t,c] = silu(Σ_j window_t[c,j] · w[c,j]),  window_t = [state[c,·], x_1..x_t][last K]
//
// x: [T, P] raw projections; state: [P, K−1], updated to the last K−1 raw
// inputs. Returns y: [T, P]. The arithmetic is be's short-conv kernel
// (kernels.RunShortConv: token by token over SIMD vectors of channels, σ
// by a vectorised exp; the ref backend keeps the float64 σ of sigmoid),
// one call per block of channels, the blocks on every core. A channel's
// bits depend neither on its block nor on T, so a prompt, a verify pass
// and decode steps agree on one backend.
func shortConv(be kernels.Backend, x, w, state []float32, P, K int) []float32 {
	T := len(x) / P
	y := make([]float32, len(x))
	parallelHeads(P, headSplit{}.workers(T*P*K*4), func(c0, c1 int) {
		kernels.RunShortConv(be, kernels.ShortConv{Y: y, X: x, W: w, State: state, T: T, P: P, K: K, C0: c0, C1: c1})
	})
	return y
}

// kdaRecurrent is the gated delta rule, one token at a time, per head h with
// state S_h [d(K), d(V)]:
//
//	S[k,:] ← S[k,:] · exp(g[k])
//	δ      = v − Σ_k k[k] · S[k,:]
//	S[k,:] ← S[k,:] + β · k[k] · δ
//	o      = Σ_k q[k] · S[k,:]
//
// q, k, v, g: [T, nh, d]; beta: [T, nh]; s: [nh, d, d]; o: [T, nh, d].
// Heads are independent: they run in parallel, each over all T tokens, with
// the same arithmetic per head as one at a time (K3: 96 heads of 128²). It
// stops early, leaving o and s torn, once ctx ends (checked every ctxBlock
// tokens). The arithmetic is be's delta-rule kernel (kdaHeads).
func kdaRecurrent(ctx context.Context, be kernels.Backend, o, q, k, v, g, beta, s []float32, T, nh, d int, heads headSplit) {
	kdaHeads(ctx, be, o, q, k, v, g, beta, s, s, T, nh, d, heads.workers(T*nh*d*d))
}

// kdaHeads runs T tokens of the delta rule for every head, on workers
// goroutines (heads split between them); the state goes from src to dst,
// which may be the same buffer: the first token reads src and writes dst,
// the others run in place on dst (a verify pass keeps src, the state
// before it).
//
// The arithmetic is kernels.RunDeltaRule (the SIMD template of package
// kernels on a fast backend, its Go twin on ref: the scalar loop here was
// 18.8 CPU-seconds of a 4,096-token K3 prefill per layer on the 16-core
// host), one call per head and block of ctxBlock tokens, with ctx checked
// between blocks. The kernel gives each token the same bits whether it
// runs alone or in a block, so a prompt, a verify pass and decode steps,
// which all come through here, agree bit for bit on one backend. be must
// therefore be the model's backend itself, never a wrapper of it (a verify
// pass's rowByRow): a backend the kernels do not know gets another kernel.
// decay = exp(g) is be's elementwise kernel, a head's d channels of a
// token a call (float64 math.Exp per element, as on ref, was a tenth of
// a k3-tiny prefill).
func kdaHeads(ctx context.Context, be kernels.Backend, o, q, k, v, g, beta, src, dst []float32, T, nh, d, workers int) {
	P := nh * d
	parallelHeads(nh, workers, func(h0, h1 int) {
		decay := make([]float32, min(T, ctxBlock)*d) // [block, d]
		for h := h0; h < h1; h++ {
			S0 := src[h*d*d : (h+1)*d*d]
			S := dst[h*d*d : (h+1)*d*d]
			for t0 := 0; t0 < T; t0 += ctxBlock {
				if t0 > 0 && stopped(ctx) {
					return
				}
				n := min(ctxBlock, T-t0)
				for t := 0; t < n; t++ {
					kernels.RunElementwise(be, kernels.ElemExp, decay[t*d:(t+1)*d], g[(t0+t)*P+h*d:][:d])
				}
				base := t0*P + h*d
				kernels.RunDeltaRule(be, kernels.DeltaRule{
					O: o[base:], Q: q[base:], K: k[base:], V: v[base:], Decay: decay, Beta: beta[t0*nh+h:],
					S0: S0, S: S, T: n, D: d, Stride: P, DecayStride: d, BetaStride: nh,
				})
				S0 = S
			}
		}
	})
}
