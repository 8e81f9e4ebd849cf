package engine

import (
	"context"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/kernels"
)

// weights is the model's spine: every tensor except the routed experts.
// Matrices are kernels views over the stored bytes; the small vectors
// (norms, gates, biases) are widened to fp32 once.
type weights struct {
	embed  kernels.Matrix // [V, H]
	norm   []float32      // [H] final RMSNorm
	lmHead kernels.Matrix // [V, H]
	outRes attnResWeights // final attention residual (K3)
	layers []layerWeights
	// keyed are the pinned matrices (those with a kernels.Key) in the
	// order a pass uses them: the layers', then the embedding and head
	// (preload.go).
	keyed []kernels.Matrix
}

type layerWeights struct {
	inNorm, postNorm []float32 // [H]
	attnRes, mlpRes  attnResWeights
	kda              *kdaWeights
	mla              *mlaWeights
	mlp              *kernels.Expert // dense MLP: W1 gate, W3 up, W2 down
	moe              *moeWeights
}

// loader reads named tensors and keeps the first error, so that weight
// loading reads like a list.
type loader struct {
	ctx context.Context
	ck  *checkpoint
	i8  *checkpoint // the int8 spine (--spine int8), or nil
	// view, when set, returns a tensor's bytes already read into RAM (a
	// streamed spine layer's slot, spinering.go), or nil to read them.
	view func(r *tensorRef) []byte
	err  error
	// resident: the matrices stay in RAM for the model's life, so each gets
	// a kernels.Key and a GPU backend may keep a copy (streamed layers,
	// whose bytes are a reused ring slot or fresh per pass, get none).
	resident bool
	// keyed are the resident matrices in the order they were read.
	keyed []kernels.Matrix
}

// matrix reads a float tensor, from the view when it holds it. A resident
// (pinned) tensor is checked for NaN and Inf as it is loaded: it stays for
// the model's life, so the scan runs once.
func (l *loader) matrix(name string) (kernels.Matrix, error) {
	if r := l.ck.tensors[name]; r != nil && l.view != nil {
		if b := l.view(r); b != nil {
			return r.matrix(b)
		}
	}
	m, err := l.ck.matrix(l.ctx, name)
	if err == nil && l.resident {
		err = checkFinite(l.ck.tensors[name], m)
	}
	return m, err
}

func (l *loader) mat(name string) kernels.Matrix {
	if l.err != nil {
		return kernels.Matrix{}
	}
	if r := l.ck.tensors[name]; l.i8 != nil && r != nil && len(r.t.Shape) == 2 {
		m, ok, err := int8Matrix(l.ctx, l.i8, name, kernels.Matrix{Rows: int(r.t.Shape[0]), Cols: int(r.t.Shape[1])})
		if ok || err != nil {
			l.err = err
			return l.key(m)
		}
	}
	m, err := l.matrix(name)
	l.err = err
	return l.key(m)
}

func (l *loader) key(m kernels.Matrix) kernels.Matrix {
	if l.resident && l.err == nil {
		m.Key = kernels.NewKey()
		l.keyed = append(l.keyed, m)
	}
	return m
}

func (l *loader) vec(name string) []float32 {
	if l.err != nil {
		return nil
	}
	m, err := l.matrix(name)
	if l.err = err; err != nil {
		return nil
	}
	return widen(m)
}

// loadWeights builds the spine of a validated checkpoint in memory: the
// globals and the first pinned layers (the others are read per pass,
// spinering.go). view, when set, holds their bytes already read and
// checked (loadPinned); a tensor it lacks is read here.
func loadWeights(ctx context.Context, ck, i8 *checkpoint, c *config, pinned int, view map[*tensorRef][]byte) (*weights, error) {
	l := &loader{ctx: ctx, ck: ck, i8: i8, resident: true}
	if view != nil {
		l.view = func(r *tensorRef) []byte { return view[r] }
	}
	w := &weights{
		embed: l.mat("model.embed_tokens.weight"),
		norm:  l.vec("model.norm.weight"),
	}
	if c.TieEmbeddings {
		w.lmHead = w.embed
	} else {
		w.lmHead = l.mat("lm_head.weight")
	}
	if c.AttnResBlock > 0 {
		w.outRes = l.attnRes("model.output_attn_res_")
	}
	w.layers = make([]layerWeights, c.Layers)
	for i := range min(pinned, c.Layers) {
		w.layers[i] = l.layer(c, i)
	}
	// The streamed layers' decay rates are checked now as well (a few
	// hundred bytes each), so a bad A_log is refused at open, not in the
	// middle of an answer.
	for i := pinned; i < c.Layers; i++ {
		if c.Kinds[i] == layerKDA {
			l.aLog(ckpt.LayerPrefix(i)+"self_attn.A_log", c)
		}
	}
	// The embedding and head were read first; a pass needs the head last.
	head := func(m kernels.Matrix) bool { return m.Key == w.embed.Key || m.Key == w.lmHead.Key }
	for _, m := range l.keyed {
		if !head(m) {
			w.keyed = append(w.keyed, m)
		}
	}
	for _, m := range l.keyed {
		if head(m) {
			w.keyed = append(w.keyed, m)
		}
	}
	return w, l.err
}

// layer reads the spine of decoder layer i.
func (l *loader) layer(c *config, i int) layerWeights {
	p := ckpt.LayerPrefix(i)
	var lw layerWeights
	lw.inNorm = l.vec(p + "input_layernorm.weight")
	lw.postNorm = l.vec(p + "post_attention_layernorm.weight")
	if c.AttnResBlock > 0 {
		lw.attnRes = l.attnRes(p + "self_attention_res_")
		lw.mlpRes = l.attnRes(p + "mlp_res_")
	}
	switch c.Kinds[i] {
	case layerKDA:
		lw.kda = l.kda(p+"self_attn.", c)
	case layerMLA:
		lw.mla = l.mla(p+"self_attn.", c)
	}
	if c.IsMoE(i) {
		lw.moe = l.moe(p+"block_sparse_moe.", c)
	} else {
		lw.mlp = l.ffn(p + "mlp.")
	}
	return lw
}

// ffn loads a gate/up/down MLP as a kernels.Expert.
func (l *loader) ffn(p string) *kernels.Expert {
	return &kernels.Expert{
		W1: l.mat(p + "gate_proj.weight"),
		W3: l.mat(p + "up_proj.weight"),
		W2: l.mat(p + "down_proj.weight"),
	}
}

func (l *loader) attnRes(p string) attnResWeights {
	return attnResWeights{norm: l.vec(p + "norm.weight"), proj: l.vec(p + "proj.weight")}
}

func (l *loader) kda(p string, c *config) *kdaWeights {
	k := &kdaWeights{
		qProj: l.mat(p + "q_proj.weight"), kProj: l.mat(p + "k_proj.weight"), vProj: l.mat(p + "v_proj.weight"),
		qConv: l.vec(p + "q_conv1d.weight"), kConv: l.vec(p + "k_conv1d.weight"), vConv: l.vec(p + "v_conv1d.weight"),
		aLog:   l.aLog(p+"A_log", c),
		dtBias: l.vec(p + "dt_bias"),
		fA:     l.mat(p + "f_a_proj.weight"), fB: l.mat(p + "f_b_proj.weight"),
		bProj: l.mat(p + "b_proj.weight"),
		oNorm: l.vec(p + "o_norm.weight"),
		oProj: l.mat(p + "o_proj.weight"),
	}
	if c.FullRankGate {
		k.gProj = l.mat(p + "g_proj.weight")
	} else {
		k.gA, k.gB = l.mat(p+"g_a_proj.weight"), l.mat(p+"g_b_proj.weight")
	}
	return k
}

// aLog reads a KDA layer's log decay rates, one per head. Kimi-Linear stores
// them as [1,1,nh,1]. K3 stores a flat [head_dim] vector whose first nh
// entries are the heads' rates and whose rest is zero padding: Moonshot's
// reference, llama.cpp's kimi-k3 converter (A_log[:num_attention_heads]) and
// mlx-lm's kimi_k3.py (A_log[:num_heads], reshaped (H,1)) all read it so
// (docs/MODEL.md, "KDA decay"). A padding entry that is not zero means the
// file is not the layout any of them reads, so it is refused rather than
// guessed at.
func (l *loader) aLog(name string, c *config) []float32 {
	a := l.vec(name)
	if l.err != nil || c.GateLowerBound == nil {
		return a
	}
	nh, r := c.KDAHeads, l.ck.tensors[name]
	if nh > len(a) {
		l.err = r.errorf("%d entries, fewer than the %d KDA heads it holds one decay rate for", len(a), nh)
		return nil
	}
	for i := nh; i < len(a); i++ {
		if a[i] != 0 {
			l.err = r.errorf("entry %d is %g: K3 stores one decay rate per head in entries 0..%d and zero padding after them", i, a[i], nh-1)
			return nil
		}
	}
	return a[:nh:nh]
}

func (l *loader) mla(p string, c *config) *mlaWeights {
	m := &mlaWeights{
		kvA:     l.mat(p + "kv_a_proj_with_mqa.weight"),
		kvANorm: l.vec(p + "kv_a_layernorm.weight"),
		kvB:     l.mat(p + "kv_b_proj.weight"),
		oProj:   l.mat(p + "o_proj.weight"),
	}
	if c.QLoRA > 0 {
		m.qA, m.qANorm, m.qB = l.mat(p+"q_a_proj.weight"), l.vec(p+"q_a_layernorm.weight"), l.mat(p+"q_b_proj.weight")
	} else {
		m.qProj = l.mat(p + "q_proj.weight")
	}
	if c.MLAOutputGate {
		g := l.mat(p + "g_proj.weight")
		m.gProj = &g
	}
	return m
}

func (l *loader) moe(p string, c *config) *moeWeights {
	m := &moeWeights{
		router: l.mat(p + "gate.weight"),
		bias:   l.vec(p + "gate.e_score_correction_bias"),
	}
	if c.Latent > 0 {
		m.down, m.up = l.mat(p+"routed_expert_down_proj.weight"), l.mat(p+"routed_expert_up_proj.weight")
		if c.LatentNorm {
			m.latentNorm = l.vec(p + "routed_expert_norm.weight")
		}
	}
	if c.SharedExperts > 0 {
		m.shared = l.ffn(p + "shared_experts.")
	}
	return m
}
