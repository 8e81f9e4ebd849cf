package engine

import (
	"context"
	"math"

	"github.com/deltafin/deltafin/kernels"
)

// Multi-head latent attention, NoPE (docs/MODEL.md §5.6). Notation: nh
// heads, query/key head width qk = nope + rope, value width dv, latent width
// r = kv_lora_rank. No rotary embedding is applied: the "rope" features are
// plain features, the key's shared by all heads.

type mlaWeights struct {
	qA      kernels.Matrix  // [q_lora, H] (q-LoRA)
	qANorm  []float32       // [q_lora]
	qB      kernels.Matrix  // [nh·qk, q_lora]
	qProj   kernels.Matrix  // [nh·qk, H] (no q-LoRA)
	kvA     kernels.Matrix  // [r + rope, H]
	kvANorm []float32       // [r]
	kvB     kernels.Matrix  // [nh·(nope+dv), r]
	gProj   *kernels.Matrix // [nh·dv, H] output gate, when configured
	oProj   kernels.Matrix  // [H, nh·dv]
}

// mlaCache holds the expanded keys and values of every past position: the
// exact form (absorbing kv_b into q and o is not bit-exact).
type mlaCache struct {
	k []float32 // [t, nh, qk]
	v []float32 // [t, nh, dv]
}

// mlaForward runs T new tokens, appending them to the cache; token t
// attends to every cached position and to new positions ≤ t. It checks ctx
// before each block of attention rows and returns its error, leaving the
// cache torn (the session is unusable after a cancelled pass anyway).
//
//	x: [T, H] (already input-normalised) → out: [T, H]
func (m *Model) mlaForward(ctx context.Context, be kernels.Backend, out, x []float32, T int, w *mlaWeights, cache *mlaCache) error {
	c := m.cfg
	nh, nope, rope, dv, r := c.Heads, c.NoPE, c.RoPE, c.VHead, c.KVLoRA
	qk := nope + rope
	mat := func(wm kernels.Matrix, in []float32) []float32 {
		y := make([]float32, T*wm.Rows)
		if !stopped(ctx) { // once ctx ends the rest is skipped, and its error returned below
			be.MatMul(y, wm, in, T)
		}
		return y
	}

	// The products over x as one call (kernels.MatMulShared: on a GPU, x
	// crosses the bus once): q_a (or q_proj), kv_a, and the output gate.
	ws := []kernels.Matrix{w.qProj, w.kvA}
	if c.QLoRA > 0 {
		ws[0] = w.qA
	}
	if w.gProj != nil {
		ws = append(ws, *w.gProj)
	}
	ys := make([][]float32, len(ws))
	for i, wm := range ws {
		ys[i] = make([]float32, T*wm.Rows)
	}
	if !stopped(ctx) {
		kernels.MatMulShared(be, ys, ws, x, T)
	}

	// q = q_b · RMSNorm(q_a · x), or q_proj · x: [T, nh, qk].
	q := ys[0]
	if c.QLoRA > 0 {
		rmsNormRows(q, q, w.qANorm, c.Eps, c.QLoRA)
		q = mat(w.qB, q)
	}

	// ckv = kv_a · x = [latent r | kpe rope]; kv = kv_b · RMSNorm(latent).
	ckv := ys[1]
	lat := make([]float32, T*r)
	for t := 0; t < T; t++ {
		rmsNorm(lat[t*r:(t+1)*r], ckv[t*(r+rope):t*(r+rope)+r], w.kvANorm, c.Eps)
	}
	kv := mat(w.kvB, lat) // [T, nh, nope+dv]

	// Keys [nope_h | kpe] and values [v_h], appended to the cache.
	past := len(cache.k) / (nh * qk)
	for t := 0; t < T; t++ {
		kpe := ckv[t*(r+rope)+r : (t+1)*(r+rope)]
		for h := 0; h < nh; h++ {
			kvh := kv[(t*nh+h)*(nope+dv) : (t*nh+h+1)*(nope+dv)]
			cache.k = append(cache.k, kvh[:nope]...)
			cache.k = append(cache.k, kpe...)
			cache.v = append(cache.v, kvh[nope:]...)
		}
	}

	if err := ctx.Err(); err != nil {
		return err
	}
	// softmax(q·k / √qk) · v per head, causal, in tiles of queries × keys
	// with an online softmax (kernels.Attention): no T×T scores, heads ×
	// query blocks spread over the backend's threads, ctx checked per block.
	attn := make([]float32, T*nh*dv)
	err := kernels.Attention(ctx, be, kernels.Attn{
		Dst: attn, Q: q, K: cache.k, V: cache.v,
		T: T, Past: past, Heads: nh, QK: qk, DV: dv, Scale: float32(1 / math.Sqrt(float64(qk))),
	})
	if err != nil {
		return err
	}

	// Output gate σ(g_proj · x) on the flattened heads, then o_proj.
	// The σ is the model's backend's elementwise kernel (a verify pass's
	// be would hide it), a worker's rows a call, the rows over the cores.
	if w.gProj != nil {
		g := ys[2]
		row := nh * dv
		parallelHeads(T, m.heads.workers(T*row*8), func(t0, t1 int) {
			gs := g[t0*row : t1*row]
			kernels.RunElementwise(m.backend, kernels.ElemSigmoid, gs, gs)
			for i := t0 * row; i < t1*row; i++ {
				attn[i] *= g[i]
			}
		})
	}
	be.MatMul(out, w.oProj, attn, T)
	return nil
}

// Attention of a speculative pass (spec.go's rowByRow) runs one row at a
// time, each as the decode step of its position, so that the pass keeps the
// bits of the decode steps it stands for.
func (b rowByRow) Attention(ctx context.Context, a kernels.Attn) error {
	for t := range a.T {
		row := a
		row.T, row.Past = 1, a.Past+t
		row.Q = a.Q[t*a.Heads*a.QK : (t+1)*a.Heads*a.QK]
		row.Dst = a.Dst[t*a.Heads*a.DV : (t+1)*a.Heads*a.DV]
		if err := kernels.Attention(ctx, b.Backend, row); err != nil {
			return err
		}
	}
	return nil
}
