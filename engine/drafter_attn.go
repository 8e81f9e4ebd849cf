package engine

// The drafter's multi-head latent attention (vLLM's DeepseekV2MLAAttention
// with a low-rank query), over a cache that holds per position only the
// normalised latent [KVL] and the rotated shared key [rope], as vLLM's MLA
// decode does. Each head's query is carried into the latent space by the
// key half of kv_b (absorbed, eagle3.absorb), attends there, and its
// latent output is lifted by the value half:
//
//	q      = W_qb · RMSNorm(W_qa · x)                    [heads, nope+rope]
//	c, k_r = split(W_kva · x); c = RMSNorm(c)           [KVL], [rope]
//	q_r, k_r rotated to the position (drafter_rope.go)
//	s_j    = scale · ((W_kᵀ q_nope)·c_j + q_r·k_r,j)     j ≤ position
//	o_h    = W_v · Σ_j softmax(s)_j c_j                  [v]
//	out    = W_o · [o_1 … o_heads]                       [H]
//
// which is the same function as expanding every cached latent into keys
// and values, in another summation order.

// drafterCache is one session's committed latent rows plus, during a
// proposal, its speculative ones past them.
type drafterCache struct {
	latent []float32 // [rows, KVL]
	kRope  []float32 // [rows, rope]
}

func (k *drafterCache) rows(kvl int) int { return len(k.latent) / kvl }

// truncate drops the rows past n (a proposal's).
func (k *drafterCache) truncate(n, kvl, rope int) {
	k.latent, k.kRope = k.latent[:n*kvl], k.kRope[:n*rope]
}

// attend runs the attention of the row at position pos (= the cache's row
// count, which it appends) on x, the layer's [2H] input, into dst [H].
func (d *eagle3) attend(dst, x []float32, pos int, k *drafterCache, sc *drafterScratch) {
	c, w, be := d.cfg, &d.w, d.backend
	be.MatVec(sc.qLow, w.qA, x)
	rmsNorm(sc.qLow, sc.qLow, w.qANorm, c.Eps)
	be.MatVec(sc.q, w.qB, sc.qLow)
	be.MatVec(sc.kv, w.kvA, x)
	rmsNorm(sc.kv[:c.KVLora], sc.kv[:c.KVLora], w.kvANorm, c.Eps)
	kr := sc.kv[c.KVLora:]
	c.rope.rotate(kr, pos)
	k.latent = append(k.latent, sc.kv[:c.KVLora]...)
	k.kRope = append(k.kRope, kr...)
	n := pos + 1
	scores := sc.scores[:0]
	for h := range c.Heads {
		q := sc.q[h*c.qkDim : (h+1)*c.qkDim]
		qr := q[c.Nope:]
		c.rope.rotate(qr, pos)
		be.MatVec(sc.qLat, w.kAbsorb[h], q[:c.Nope])
		scores = scores[:0]
		for j := range n {
			lat := k.latent[j*c.KVLora : (j+1)*c.KVLora]
			var s float32
			for l, v := range sc.qLat {
				s += v * lat[l]
			}
			var r float32
			for i, v := range qr {
				r += v * k.kRope[j*c.Rope+i]
			}
			scores = append(scores, (s+r)*c.softmaxScale)
		}
		softmax(scores)
		clear(sc.oLat)
		for j, p := range scores {
			lat := k.latent[j*c.KVLora : (j+1)*c.KVLora]
			for l, v := range lat {
				sc.oLat[l] += p * v
			}
		}
		be.MatVec(sc.heads[h*c.VDim:(h+1)*c.VDim], w.vUp[h], sc.oLat)
	}
	sc.scores = scores
	be.MatVec(dst, w.o, sc.heads)
}

// drafterScratch is one session's working buffers, sized once.
type drafterScratch struct {
	emb, hid, in, residual []float32 // [H], [H], [2H], [H]
	fused                  []float32 // [taps·TH]
	qLow, q, kv            []float32 // [QL], [heads·(nope+rope)], [KVL+rope]
	qLat, oLat             []float32 // [KVL]
	heads                  []float32 // [heads·v]
	attn, x, mlp, out      []float32 // [H]
	logits                 []float32 // [V]
	scores                 []float32 // [rows]
}

func newDrafterScratch(c *drafterConfig) *drafterScratch {
	H := c.Hidden
	return &drafterScratch{
		emb: make([]float32, H), hid: make([]float32, H), in: make([]float32, 2*H), residual: make([]float32, H),
		fused: make([]float32, c.nTaps*c.TargetHidden),
		qLow:  make([]float32, c.QLora), q: make([]float32, c.Heads*c.qkDim), kv: make([]float32, c.KVLora+c.Rope),
		qLat: make([]float32, c.KVLora), oLat: make([]float32, c.KVLora),
		heads: make([]float32, c.Heads*c.VDim),
		attn:  make([]float32, H), x: make([]float32, H), mlp: make([]float32, H), out: make([]float32, H),
		logits: make([]float32, c.Vocab),
	}
}
