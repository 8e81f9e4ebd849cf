package engine

import (
	"context"
	"math"
	"slices"

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

	// The queries' latent RMSNorm(q_a · x) (or q_proj · x, the queries
	// themselves) and the keys' and values' RMSNorm(latent), with kv_a's
	// kpe columns beside it: [T, q_lora], [T, r], [T, r + rope].
	q, wq := ys[0], kernels.Matrix{}
	if c.QLoRA > 0 {
		rmsNormRows(q, q, w.qANorm, c.Eps, c.QLoRA)
		wq = w.qB
	}
	ckv := ys[1]
	lat := make([]float32, T*r)
	for t := 0; t < T; t++ {
		rmsNorm(lat[t*r:(t+1)*r], ckv[t*(r+rope):t*(r+rope)+r], w.kvANorm, c.Eps)
	}
	if err := ctx.Err(); err != nil {
		return err
	}

	// Queries q_b · latent [T, nh, qk]; kv = kv_b · RMSNorm(latent)
	// [T, nh, nope+dv]; the keys [nope_h | kpe] and values [v_h] appended
	// to the cache; softmax(q·k / √qk) · v per head, causal, in tiles of
	// queries × keys with an online softmax: no T×T scores, heads × query
	// blocks spread over the backend's threads, ctx checked per block
	// (kernels.LatentAttention: on a GPU all of it on the device, the
	// latents in and kv and the outputs back).
	past := len(cache.k) / (nh * qk)
	cache.k = slices.Grow(cache.k, T*nh*qk)[:len(cache.k)+T*nh*qk]
	cache.v = slices.Grow(cache.v, T*nh*dv)[:len(cache.v)+T*nh*dv]
	attn := make([]float32, T*nh*dv)
	err := kernels.LatentAttention(ctx, be, kernels.LatentAttn{
		Dst: attn, QIn: q, WQ: wq, Lat: lat, WKV: w.kvB,
		KPE: ckv, KPEStride: r + rope, KPEOff: r,
		K: cache.k, V: cache.v, KV: make([]float32, T*nh*(nope+dv)),
		T: T, Past: past, Heads: nh, NoPE: nope, RoPE: rope, DV: dv, Scale: float32(1 / math.Sqrt(float64(qk))),
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
