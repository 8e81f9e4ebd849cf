package engine

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/kernels"
)

// The EAGLE-3.1 drafter for K3 (lightseekorg/kimi-k3-eagle3.1-mla;
// docs/DRAFTER.md has the architecture and its sources): one MLA decoder
// layer, as vLLM's Eagle3DeepseekV2ForCausalLM runs it, that reads three of
// the target's hidden states per position. This file is its config and its
// checkpoint: every tensor's name, dtype and shape checked against the
// config as the target's loader checks its own, the weights then resident
// in RAM for the model's life (residentBytes is what the RAM budget
// counts). drafter_rope.go, drafter_attn.go and drafter_step.go are its
// forward pass.

// drafterConfig is config.json of an EAGLE-3 drafter with an MLA layer. The
// field names are those vLLM's deepseek_eagle3.py and DeepseekV2MLAAttention
// read.
type drafterConfig struct {
	Hidden, Inter, Heads       int
	QLora, KVLora              int
	Nope, Rope, VDim           int
	Vocab                      int
	TargetHidden               int
	Eps                        float32
	Taps                       []int // zero-based target layers: vLLM's aux ids − 1
	FCNorm, NormOutput         bool
	MaxPos                     int
	rope                       yarnRope
	nTaps                      int
	qkDim                      int // Nope + Rope
	softmaxScale               float32
	architectures, hiddenActFn string
}

type rawDrafterConfig struct {
	Architectures      []string        `json:"architectures"`
	Hidden             int             `json:"hidden_size"`
	Inter              int             `json:"intermediate_size"`
	Layers             int             `json:"num_hidden_layers"`
	Heads              int             `json:"num_attention_heads"`
	QLora              *int            `json:"q_lora_rank"`
	KVLora             int             `json:"kv_lora_rank"`
	Nope               int             `json:"qk_nope_head_dim"`
	Rope               int             `json:"qk_rope_head_dim"`
	VDim               int             `json:"v_head_dim"`
	Vocab              int             `json:"vocab_size"`
	DraftVocab         *int            `json:"draft_vocab_size"`
	TargetHidden       *int            `json:"target_hidden_size"`
	Eps                float64         `json:"rms_norm_eps"`
	HiddenAct          string          `json:"hidden_act"`
	MaxPos             int             `json:"max_position_embeddings"`
	RopeTheta          *float64        `json:"rope_theta"`
	RopeScaling        *rawRope        `json:"rope_scaling"`
	RopeParameters     *rawRope        `json:"rope_parameters"`
	FCNorm             bool            `json:"fc_norm"`
	NormOutput         bool            `json:"norm_output"`
	NormBeforeResidual bool            `json:"norm_before_residual"`
	NumAux             *int            `json:"num_aux_hidden_states"`
	EagleConfig        *rawEagleConfig `json:"eagle_config"`
}

type rawEagleConfig struct {
	AuxLayerIDs []int `json:"eagle_aux_hidden_state_layer_ids"`
}

type rawRope struct {
	Type          string   `json:"type"`
	RopeType      string   `json:"rope_type"`
	Theta         *float64 `json:"rope_theta"`
	Factor        float64  `json:"factor"`
	OrigMax       int      `json:"original_max_position_embeddings"`
	BetaFast      *float64 `json:"beta_fast"`
	BetaSlow      *float64 `json:"beta_slow"`
	Mscale        *float64 `json:"mscale"`
	MscaleAllDim  *float64 `json:"mscale_all_dim"`
	AttentionFctr *float64 `json:"attention_factor"`
}

// eagle3Architectures are the names vLLM's model registry maps to
// Eagle3DeepseekV2ForCausalLM.
var eagle3Architectures = []string{"Eagle3DeepseekV2ForCausalLM", "Eagle3DeepseekV3ForCausalLM"}

// parseDrafterConfig reads an EAGLE-3 MLA drafter's config for a target of
// targetLayers layers. Its errors are plain text; the caller adds
// ErrConfig and the path.
func parseDrafterConfig(b []byte, targetLayers int) (*drafterConfig, error) {
	var r rawDrafterConfig
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	if len(r.Architectures) != 1 || !slices.Contains(eagle3Architectures, r.Architectures[0]) {
		return nil, fmt.Errorf("architectures %q, want one of %q (an EAGLE-3 drafter with an MLA layer)", r.Architectures, eagle3Architectures)
	}
	if r.Layers != 1 {
		// vLLM's later layers take [hidden] alone and an add-norm; no
		// published K3 drafter has them, so they are refused, not guessed.
		return nil, fmt.Errorf("num_hidden_layers %d: only the one-layer EAGLE-3 drafter is supported", r.Layers)
	}
	if r.QLora == nil {
		return nil, errors.New("q_lora_rank is null: only the MLA layer with a low-rank query is supported")
	}
	if r.HiddenAct != "silu" {
		return nil, fmt.Errorf("hidden_act %q, want silu (vLLM's DeepseekV2MLP)", r.HiddenAct)
	}
	if r.NormBeforeResidual {
		return nil, errors.New("norm_before_residual is true: not supported (no K3 drafter uses it)")
	}
	c := &drafterConfig{
		Hidden: r.Hidden, Inter: r.Inter, Heads: r.Heads, QLora: *r.QLora, KVLora: r.KVLora,
		Nope: r.Nope, Rope: r.Rope, VDim: r.VDim, Vocab: r.Vocab, Eps: float32(r.Eps),
		FCNorm: r.FCNorm, NormOutput: r.NormOutput, MaxPos: r.MaxPos,
		architectures: r.Architectures[0], hiddenActFn: r.HiddenAct,
	}
	c.TargetHidden = c.Hidden
	if r.TargetHidden != nil {
		c.TargetHidden = *r.TargetHidden
	}
	for _, d := range []struct {
		name string
		v    int
	}{
		{"hidden_size", c.Hidden}, {"intermediate_size", c.Inter}, {"num_attention_heads", c.Heads},
		{"q_lora_rank", c.QLora}, {"kv_lora_rank", c.KVLora}, {"qk_nope_head_dim", c.Nope},
		{"qk_rope_head_dim", c.Rope}, {"v_head_dim", c.VDim}, {"vocab_size", c.Vocab},
		{"target_hidden_size", c.TargetHidden}, {"max_position_embeddings", c.MaxPos},
	} {
		if d.v <= 0 || d.v > 1<<24 {
			return nil, fmt.Errorf("%s %d is not a positive size", d.name, d.v)
		}
	}
	if c.Rope%2 != 0 {
		return nil, fmt.Errorf("qk_rope_head_dim %d is odd: rotary pairs need an even width", c.Rope)
	}
	if r.DraftVocab != nil && *r.DraftVocab != c.Vocab {
		// A pruned draft vocabulary maps through d2t; K3's drafter has the
		// full 163,840 rows and no d2t (docs/DRAFTER.md).
		return nil, fmt.Errorf("draft_vocab_size %d differs from vocab_size %d: a pruned draft vocabulary (d2t) is not supported", *r.DraftVocab, c.Vocab)
	}
	if !(r.Eps > 0) || math.IsInf(r.Eps, 0) {
		return nil, fmt.Errorf("rms_norm_eps %v is not positive", r.Eps)
	}
	// The taps: vLLM's eagle_aux_hidden_state_layer_ids are the layers
	// whose input is captured, so id i is the stream after layer i−1. With
	// none given, vLLM's DeepSeek default (2, L/2, L−3).
	ids := []int{2, targetLayers / 2, targetLayers - 3}
	if r.EagleConfig != nil && r.EagleConfig.AuxLayerIDs != nil {
		ids = r.EagleConfig.AuxLayerIDs
	}
	if r.NumAux != nil && *r.NumAux != len(ids) {
		return nil, fmt.Errorf("num_aux_hidden_states %d but %d aux layer ids", *r.NumAux, len(ids))
	}
	if len(ids) == 0 {
		return nil, errors.New("no aux hidden-state layers")
	}
	for _, id := range ids {
		if id < 1 || id > targetLayers {
			return nil, fmt.Errorf("aux hidden-state layer id %d outside the target's 1..%d", id, targetLayers)
		}
		c.Taps = append(c.Taps, id-1)
	}
	c.nTaps = len(c.Taps)
	c.qkDim = c.Nope + c.Rope
	rope, err := parseYarn(r)
	if err != nil {
		return nil, err
	}
	c.rope = rope
	c.rope.dim = c.Rope
	c.rope.freqs()
	// DeepseekV2MLAAttention: scaling = qk_head_dim^−½, times mscale² of
	// mscale_all_dim when the rope is YaRN.
	scale := 1 / math.Sqrt(float64(c.qkDim))
	if rope.yarn {
		m := yarnMscale(rope.factor, rope.mscaleAllDim)
		scale *= m * m
	}
	c.softmaxScale = float32(scale)
	return c, nil
}

// drafterWeights are the drafter's tensors. Matrices view the stored bytes
// (PyTorch [out, in]); vectors are widened to fp32.
type drafterWeights struct {
	embed      kernels.Matrix   // [V, H] embed_tokens
	fc         kernels.Matrix   // [H, taps·TH] fuses the taps
	fcNorm     [][]float32      // taps × [TH] (fc_norm), nil without
	hiddenNorm []float32        // [H] layers.0.hidden_norm
	inputNorm  []float32        // [H] layers.0.input_layernorm (the embedding's)
	qA         kernels.Matrix   // [QL, 2H]
	qANorm     []float32        // [QL]
	qB         kernels.Matrix   // [heads·(nope+rope), QL]
	kvA        kernels.Matrix   // [KVL+rope, 2H]
	kvANorm    []float32        // [KVL]
	kvB        kernels.Matrix   // [heads·(nope+v), KVL]
	kAbsorb    []kernels.Matrix // heads × F32 [KVL, nope]: kv_b's key rows transposed
	vUp        []kernels.Matrix // heads × [v, KVL]: views of kv_b's value rows
	o          kernels.Matrix   // [H, heads·v]
	postNorm   []float32        // [H] layers.0.post_attention_layernorm
	mlp        kernels.Expert   // W1 gate [I, H], W3 up [I, H], W2 down [H, I]
	norm       []float32        // [H] final norm
	lmHead     kernels.Matrix   // [V, H]
}

// drafterRoster is every tensor the config says the checkpoint holds, in
// file order of the published checkpoint.
func (c *drafterConfig) drafterRoster() []tensorSpec {
	H, p := c.Hidden, "layers.0."
	s := func(name string, shape ...int) tensorSpec {
		sh := make([]int64, len(shape))
		for i, d := range shape {
			sh[i] = int64(d)
		}
		return tensorSpec{name: name, class: floatTensor, shape: sh}
	}
	r := []tensorSpec{
		s("embed_tokens.weight", c.Vocab, H),
		s("fc.weight", H, c.nTaps*c.TargetHidden),
	}
	if c.FCNorm {
		for i := range c.nTaps {
			r = append(r, s(fmt.Sprintf("fc_norm.%d.weight", i), c.TargetHidden))
		}
	}
	return append(r,
		s(p+"hidden_norm.weight", H),
		s(p+"input_layernorm.weight", H),
		s(p+"self_attn.q_a_proj.weight", c.QLora, 2*H),
		s(p+"self_attn.q_a_layernorm.weight", c.QLora),
		s(p+"self_attn.q_b_proj.weight", c.Heads*c.qkDim, c.QLora),
		s(p+"self_attn.kv_a_proj_with_mqa.weight", c.KVLora+c.Rope, 2*H),
		s(p+"self_attn.kv_a_layernorm.weight", c.KVLora),
		s(p+"self_attn.kv_b_proj.weight", c.Heads*(c.Nope+c.VDim), c.KVLora),
		s(p+"self_attn.o_proj.weight", H, c.Heads*c.VDim),
		s(p+"post_attention_layernorm.weight", H),
		s(p+"mlp.gate_proj.weight", c.Inter, H),
		s(p+"mlp.up_proj.weight", c.Inter, H),
		s(p+"mlp.down_proj.weight", H, c.Inter),
		s("norm.weight", H),
		s("lm_head.weight", c.Vocab, H),
	)
}

// validateDrafter checks ck against the roster: the first missing,
// mis-typed or mis-shaped tensor, then the first unexpected one by name.
func (ck *checkpoint) validateDrafter(c *drafterConfig) error {
	want := make(map[string]bool)
	for _, s := range c.drafterRoster() {
		want[s.name] = true
		if err := ck.check(s); err != nil {
			return err
		}
	}
	var extra []string
	for name := range ck.tensors {
		if !want[name] {
			extra = append(extra, name)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return ck.tensors[extra[0]].errorf("unexpected tensor (not part of this drafter; %d unexpected in all)", len(extra))
	}
	return nil
}

// eagle3 is a loaded EAGLE-3 drafter (a draftSource): immutable, shared by
// every session that drafts with it (each gets its own cache,
// drafter_step.go).
type eagle3 struct {
	cfg     *drafterConfig
	w       drafterWeights
	backend kernels.Backend
	bytes   int64
}

// drafterOptions configure openEagle3.
type drafterOptions struct {
	// TargetLayers and TargetHidden are the target's num_hidden_layers and
	// hidden_size: the taps must be its layers and the fused states its
	// width.
	TargetLayers, TargetHidden, TargetVocab int
	// Backend runs the drafter's matrix products (nil: kernels.Best()).
	Backend kernels.Backend
}

// openEagle3 reads an EAGLE-3 drafter directory (config.json and
// model.safetensors, or shards with their index), validates every tensor
// against the config and loads the weights into RAM.
func openEagle3(ctx context.Context, dir string, o drafterOptions) (*eagle3, error) {
	path := filepath.Join(dir, "config.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: drafter: %v", ErrConfig, err)
	}
	c, err := parseDrafterConfig(b, o.TargetLayers)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %s", ErrConfig, path, err)
	}
	if o.TargetHidden > 0 && c.TargetHidden != o.TargetHidden {
		return nil, fmt.Errorf("%w: %s: target_hidden_size %d, but the target's hidden_size is %d", ErrConfig, path, c.TargetHidden, o.TargetHidden)
	}
	if o.TargetVocab > 0 && c.Vocab != o.TargetVocab {
		return nil, fmt.Errorf("%w: %s: vocab_size %d, but the target's is %d", ErrConfig, path, c.Vocab, o.TargetVocab)
	}
	if c.Hidden != c.TargetHidden {
		// The first layer concatenates the embedding and the fused state
		// (deepseek_eagle3.py asserts the widths agree).
		return nil, fmt.Errorf("%w: %s: hidden_size %d differs from target_hidden_size %d", ErrConfig, path, c.Hidden, c.TargetHidden)
	}
	ck, err := openCheckpoint(ctx, dir, ckpt.OpenFile)
	if err != nil {
		return nil, err
	}
	defer ck.close()
	if err := ck.validateDrafter(c); err != nil {
		return nil, err
	}
	d := &eagle3{cfg: c, backend: o.Backend}
	if d.backend == nil {
		d.backend = kernels.Default()
	}
	if err := d.load(ctx, ck); err != nil {
		return nil, err
	}
	return d, nil
}

// load reads every tensor into RAM (checked for NaN and Inf as the pinned
// spine is) and builds the absorbed key matrices.
func (d *eagle3) load(ctx context.Context, ck *checkpoint) error {
	c, p := d.cfg, "layers.0.self_attn."
	l := &loader{ctx: ctx, ck: ck, resident: true}
	w := &d.w
	w.embed = l.mat("embed_tokens.weight")
	w.fc = l.mat("fc.weight")
	if c.FCNorm {
		for i := range c.nTaps {
			w.fcNorm = append(w.fcNorm, l.vec(fmt.Sprintf("fc_norm.%d.weight", i)))
		}
	}
	w.hiddenNorm = l.vec("layers.0.hidden_norm.weight")
	w.inputNorm = l.vec("layers.0.input_layernorm.weight")
	w.qA, w.qANorm, w.qB = l.mat(p+"q_a_proj.weight"), l.vec(p+"q_a_layernorm.weight"), l.mat(p+"q_b_proj.weight")
	w.kvA, w.kvANorm, w.kvB = l.mat(p+"kv_a_proj_with_mqa.weight"), l.vec(p+"kv_a_layernorm.weight"), l.mat(p+"kv_b_proj.weight")
	w.o = l.mat(p + "o_proj.weight")
	w.postNorm = l.vec("layers.0.post_attention_layernorm.weight")
	w.mlp = *l.ffn("layers.0.mlp.")
	w.norm = l.vec("norm.weight")
	w.lmHead = l.mat("lm_head.weight")
	if l.err != nil {
		return l.err
	}
	d.absorb()
	d.bytes = 0
	for _, m := range []kernels.Matrix{w.embed, w.fc, w.qA, w.qB, w.kvA, w.kvB, w.o, w.mlp.W1, w.mlp.W2, w.mlp.W3, w.lmHead} {
		d.bytes += int64(len(m.Data) + len(m.Scales))
	}
	for _, m := range w.kAbsorb {
		d.bytes += int64(len(m.Data))
	}
	vecs := append([][]float32{w.hiddenNorm, w.inputNorm, w.qANorm, w.kvANorm, w.postNorm, w.norm}, w.fcNorm...)
	for _, v := range vecs {
		d.bytes += int64(4 * len(v))
	}
	return nil
}

// absorb splits kv_b per head: the key rows transposed to F32 [KVL, nope]
// so that a query is carried into the latent space by one product
// (q_lat = W_kᵀ·q_nope), and the value rows as views [v, KVL]. The cache
// then holds only the latent and the rotary key per position, as vLLM's
// MLA decode does.
func (d *eagle3) absorb() {
	c, w := d.cfg, &d.w
	stride := c.Nope + c.VDim
	row := make([]float32, c.KVLora)
	rowBytes := len(w.kvB.Data) / w.kvB.Rows
	for h := range c.Heads {
		t := make([]float32, c.KVLora*c.Nope) // [KVL, nope]
		for j := range c.Nope {
			kernels.DecodeRow(row, w.kvB, h*stride+j)
			for l, v := range row {
				t[l*c.Nope+j] = v
			}
		}
		w.kAbsorb = append(w.kAbsorb, kernels.Matrix{DType: kernels.F32, Rows: c.KVLora, Cols: c.Nope, Data: f32Bytes(t), Key: kernels.NewKey()})
		first := h*stride + c.Nope
		w.vUp = append(w.vUp, kernels.Matrix{
			DType: w.kvB.DType, Rows: c.VDim, Cols: c.KVLora,
			Data: w.kvB.Data[first*rowBytes : (first+c.VDim)*rowBytes], Key: kernels.NewKey(),
		})
	}
}

// tapLayers are the target layers (zero-based) whose hidden states it
// reads.
func (d *eagle3) tapLayers() []int { return slices.Clone(d.cfg.Taps) }

// f32Bytes stores v as little-endian float32, the layout of an F32 matrix.
func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// WithDrafter is d (n-gram speculation, "ngram", or none) with the EAGLE-3
// drafter in dir drafting beside it, for the target model in targetDir,
// whose config.json gives the layers the taps must be in and the width and
// vocabulary the drafter must share. Its weights are loaded into RAM here
// (be runs its products; nil: kernels.Default()) and counted by the RAM
// plan of the model opened with it (Options.Draft).
func (d Draft) WithDrafter(ctx context.Context, dir, targetDir string, be kernels.Backend) (Draft, error) {
	if d.Kind != "" && d.Kind != "ngram" {
		return Draft{}, fmt.Errorf("--draft %s drafts alone: the model drafter joins n-gram speculation only: %w", d.Kind, ErrDraft)
	}
	t, err := loadConfig(targetDir)
	if err != nil {
		return Draft{}, err
	}
	e, err := openEagle3(ctx, dir, drafterOptions{TargetLayers: t.Layers, TargetHidden: t.Hidden, TargetVocab: t.Vocab, Backend: be})
	if err != nil {
		return Draft{}, err
	}
	d.src = e
	return d, nil
}
