package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/deltafin/deltafin/kernels"
)

// layerKind says which token mixer a decoder layer uses.
type layerKind uint8

const (
	layerKDA layerKind = iota // Kimi Delta Attention (linear, recurrent state)
	layerMLA                  // multi-head latent attention (NoPE, KV cache)
)

// config is the text model's shape, read from config.json. Every size the
// forward pass uses comes from here; nothing of K3's dimensions is
// hard-coded, so the tiny test models run through the same code as the 2.8T
// model.
type config struct {
	// ModelType is the root model_type: "kimi_k3" (text_config nested inside)
	// or "kimi_linear".
	ModelType string

	Vocab, Hidden, Layers int
	Eps                   float32 // rms_norm_eps
	TieEmbeddings         bool
	BOS, EOS              int // -1 when the config has none
	ContextLen            int

	Kinds []layerKind // per layer, 0-based

	// KDA (linear_attn_config).
	KDAHeads, KDAHeadDim, ConvSize int
	FullRankGate                   bool // g_proj [P,H] instead of g_a/g_b
	// GateLowerBound selects K3's decay gate g = lb·σ(exp(A_log[h])·(g̃+dt_bias));
	// nil selects Kimi-Linear's g = −exp(A_log[h])·softplus(g̃+dt_bias).
	// Both read A_log per head (K3 pads it to head_dim with zeros).
	GateLowerBound *float32

	// MLA.
	Heads, QLoRA, KVLoRA, NoPE, RoPE, VHead int // QLoRA 0: plain q_proj
	MLAOutputGate                           bool

	// Block attention residuals; 0 means plain residual connections.
	AttnResBlock int

	// Dense MLP and MoE.
	Intermediate    int // dense MLP width
	FirstKDense     int
	MoEFreq         int
	Experts, TopK   int // routed experts per layer and per token
	MoEIntermediate int
	SharedExperts   int
	Latent          int // routed_expert_hidden_size; 0: experts work in Hidden
	LatentNorm      bool
	NGroup, TopKGrp int
	Renormalize     bool
	RoutedScaling   float32
	Act             kernels.Activation
	// ExpertsMXFP4: routed experts are compressed-tensors
	// mxfp4-pack-quantized (U8 weight_packed / weight_scale).
	ExpertsMXFP4 bool
}

// IsMoE reports whether layer i uses the MoE block (else the dense MLP).
func (c *config) IsMoE(i int) bool {
	return c.Experts > 0 && i >= c.FirstKDense && i%c.MoEFreq == 0
}

// ExpertDim is the width routed experts read and write: the latent width
// when the latent MoE is on, else the hidden size.
func (c *config) ExpertDim() int {
	if c.Latent > 0 {
		return c.Latent
	}
	return c.Hidden
}

// maxDim bounds every size in config.json (K3's largest is the 1M context).
const maxDim = 1 << 24

// maxLayers bounds num_hidden_layers.
const maxLayers = 1 << 12

// rawText mirrors the fields of a kimi_linear text config that the engine reads.
type rawText struct {
	ModelType          string   `json:"model_type"`
	VocabSize          *int     `json:"vocab_size"`
	HiddenSize         *int     `json:"hidden_size"`
	NumHiddenLayers    *int     `json:"num_hidden_layers"`
	IntermediateSize   *int     `json:"intermediate_size"`
	MoEIntermediate    *int     `json:"moe_intermediate_size"`
	RoutedExpertHidden *int     `json:"routed_expert_hidden_size"`
	NumExperts         *int     `json:"num_experts"`
	ExpertsPerToken    *int     `json:"num_experts_per_token"`
	NumShared          *int     `json:"num_shared_experts"`
	FirstKDense        *int     `json:"first_k_dense_replace"`
	MoELayerFreq       *int     `json:"moe_layer_freq"`
	NumExpertGroup     *int     `json:"num_expert_group"`
	TopKGroup          *int     `json:"topk_group"`
	RouterAct          *string  `json:"moe_router_activation_func"`
	Renormalize        *bool    `json:"moe_renormalize"`
	RoutedScaling      *float64 `json:"routed_scaling_factor"`
	LatentNorm         *bool    `json:"latent_moe_use_norm"`
	HiddenAct          *string  `json:"hidden_act"`
	SituBeta           *float64 `json:"activation_situ_beta"`
	SituLinearBeta     *float64 `json:"activation_situ_linear_beta"`
	RMSEps             *float64 `json:"rms_norm_eps"`
	Heads              *int     `json:"num_attention_heads"`
	KVHeads            *int     `json:"num_key_value_heads"`
	QLoRA              *int     `json:"q_lora_rank"`
	KVLoRA             *int     `json:"kv_lora_rank"`
	NoPE               *int     `json:"qk_nope_head_dim"`
	RoPE               *int     `json:"qk_rope_head_dim"`
	VHead              *int     `json:"v_head_dim"`
	MLAUseNoPE         *bool    `json:"mla_use_nope"`
	MLAOutputGate      *bool    `json:"mla_use_output_gate"`
	AttnResBlock       *int     `json:"attn_res_block_size"`
	MaxPositions       *int     `json:"max_position_embeddings"`
	ModelMaxLength     *int     `json:"model_max_length"`
	NextN              *int     `json:"num_nextn_predict_layers"`
	Tie                *bool    `json:"tie_word_embeddings"`
	BOS                *int     `json:"bos_token_id"`
	EOS                *int     `json:"eos_token_id"`
	Linear             *struct {
		HeadDim        *int     `json:"head_dim"`
		NumHeads       *int     `json:"num_heads"`
		ConvSize       *int     `json:"short_conv_kernel_size"`
		FullRankGate   *bool    `json:"use_full_rank_gate"`
		GateLowerBound *float64 `json:"gate_lower_bound"`
		KDALayers      []int    `json:"kda_layers"`
		FullAttnLayers []int    `json:"full_attn_layers"`
	} `json:"linear_attn_config"`
	Quant *struct {
		Format      string `json:"format"`
		QuantMethod string `json:"quant_method"`
		Groups      map[string]struct {
			Format  string `json:"format"`
			Weights struct {
				GroupSize int    `json:"group_size"`
				NumBits   int    `json:"num_bits"`
				Type      string `json:"type"`
			} `json:"weights"`
		} `json:"config_groups"`
	} `json:"quantization_config"`
}

type rawRoot struct {
	rawText
	TextConfig *rawText `json:"text_config"`
}

// loadConfig reads dir/config.json.
func loadConfig(dir string) (*config, error) {
	path := filepath.Join(dir, "config.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	c, err := parseConfig(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %s", ErrConfig, path, err)
	}
	return c, nil
}

// parseConfig's errors are plain text; the callers add ErrConfig and where.
func parseConfig(b []byte) (*config, error) {
	var root rawRoot
	if err := json.Unmarshal(b, &root); err != nil {
		return nil, err
	}
	t := &root.rawText
	switch root.ModelType {
	case "kimi_k3":
		if root.TextConfig == nil {
			return nil, errors.New("model_type kimi_k3 without text_config")
		}
		t = root.TextConfig
		if t.ModelType != "kimi_linear" {
			return nil, fmt.Errorf("text_config.model_type %q, want kimi_linear", t.ModelType)
		}
		// The root repeats the special ids; the text config's win when set.
		if t.BOS == nil {
			t.BOS = root.BOS
		}
		if t.EOS == nil {
			t.EOS = root.EOS
		}
		if t.Quant == nil {
			t.Quant = root.Quant
		}
	case "kimi_linear":
	default:
		return nil, fmt.Errorf("model_type %q (want kimi_k3 or kimi_linear)", root.ModelType)
	}
	c, err := t.config()
	if err != nil {
		return nil, err
	}
	c.ModelType = root.ModelType
	return c, nil
}

// config checks every field and fills a config. Required fields must be
// present; optional ones take Kimi-Linear's defaults.
func (t *rawText) config() (*config, error) {
	var errs []string
	req := func(name string, p *int, min int) int {
		switch {
		case p == nil:
			errs = append(errs, name+" is missing")
		case *p < min:
			errs = append(errs, fmt.Sprintf("%s = %d, want ≥ %d", name, *p, min))
		case *p > maxDim:
			// config.json comes from a download: bound it before anything
			// is sized from it.
			errs = append(errs, fmt.Sprintf("%s = %d exceeds %d", name, *p, maxDim))
		default:
			return *p
		}
		return min
	}
	opt := func(name string, p *int, def, min int) int {
		if p == nil {
			return def
		}
		return req(name, p, min)
	}
	optBool := func(p *bool, def bool) bool {
		if p == nil {
			return def
		}
		return *p
	}
	c := &config{
		Vocab:   req("vocab_size", t.VocabSize, 1),
		Hidden:  req("hidden_size", t.HiddenSize, 1),
		Layers:  req("num_hidden_layers", t.NumHiddenLayers, 1),
		Eps:     1e-6,
		BOS:     opt("bos_token_id", t.BOS, -1, 0),
		EOS:     opt("eos_token_id", t.EOS, -1, 0),
		Heads:   req("num_attention_heads", t.Heads, 1),
		QLoRA:   opt("q_lora_rank", t.QLoRA, 0, 1),
		KVLoRA:  req("kv_lora_rank", t.KVLoRA, 1),
		NoPE:    req("qk_nope_head_dim", t.NoPE, 1),
		RoPE:    opt("qk_rope_head_dim", t.RoPE, 0, 0),
		VHead:   req("v_head_dim", t.VHead, 1),
		Experts: opt("num_experts", t.NumExperts, 0, 0),

		AttnResBlock:  opt("attn_res_block_size", t.AttnResBlock, 0, 1),
		Intermediate:  req("intermediate_size", t.IntermediateSize, 1),
		FirstKDense:   opt("first_k_dense_replace", t.FirstKDense, 0, 0),
		MoEFreq:       opt("moe_layer_freq", t.MoELayerFreq, 1, 1),
		SharedExperts: opt("num_shared_experts", t.NumShared, 0, 0),
		Latent:        opt("routed_expert_hidden_size", t.RoutedExpertHidden, 0, 1),
		LatentNorm:    optBool(t.LatentNorm, false),
		NGroup:        opt("num_expert_group", t.NumExpertGroup, 1, 1),
		TopKGrp:       opt("topk_group", t.TopKGroup, 1, 1),
		Renormalize:   optBool(t.Renormalize, true),
		RoutedScaling: 1,
		TieEmbeddings: optBool(t.Tie, false),
		MLAOutputGate: optBool(t.MLAOutputGate, false),
	}
	if t.RMSEps != nil {
		c.Eps = float32(*t.RMSEps)
	}
	if t.RoutedScaling != nil {
		c.RoutedScaling = float32(*t.RoutedScaling)
	}
	if c.Layers > maxLayers {
		errs = append(errs, fmt.Sprintf("num_hidden_layers = %d exceeds %d", c.Layers, maxLayers))
		c.Layers = 1
	}
	c.ContextLen = opt("max_position_embeddings", t.MaxPositions, 0, 1)
	if c.ContextLen == 0 {
		c.ContextLen = opt("model_max_length", t.ModelMaxLength, 0, 1)
	}
	if c.Layers > maxLayers {
		errs = append(errs, fmt.Sprintf("num_hidden_layers = %d exceeds %d", c.Layers, maxLayers))
		c.Layers = 1
	}
	if t.KVHeads != nil && *t.KVHeads != c.Heads {
		errs = append(errs, fmt.Sprintf("num_key_value_heads %d ≠ num_attention_heads %d (MLA has no GQA)", *t.KVHeads, c.Heads))
	}
	if t.MLAUseNoPE != nil && !*t.MLAUseNoPE {
		errs = append(errs, "mla_use_nope false: rotary MLA is not part of Kimi K3 or Kimi-Linear")
	}
	if t.NextN != nil && *t.NextN != 0 {
		errs = append(errs, "num_nextn_predict_layers ≠ 0: MTP layers are not supported")
	}
	if c.Experts > 0 {
		c.TopK = req("num_experts_per_token", t.ExpertsPerToken, 1)
		c.MoEIntermediate = req("moe_intermediate_size", t.MoEIntermediate, 1)
		if c.TopK > c.Experts {
			errs = append(errs, fmt.Sprintf("num_experts_per_token %d > num_experts %d", c.TopK, c.Experts))
		}
		if c.Experts%c.NGroup != 0 || c.TopKGrp > c.NGroup {
			errs = append(errs, fmt.Sprintf("num_expert_group %d / topk_group %d do not divide %d experts", c.NGroup, c.TopKGrp, c.Experts))
		}
		if c.NGroup > 1 && c.Experts/c.NGroup < 2 {
			errs = append(errs, "group-limited routing needs at least 2 experts per group")
		}
		if t.RouterAct != nil && *t.RouterAct != "sigmoid" {
			errs = append(errs, fmt.Sprintf("moe_router_activation_func %q (only sigmoid)", *t.RouterAct))
		}
	}
	act := "silu"
	if t.HiddenAct != nil {
		act = *t.HiddenAct
	}
	switch act {
	case "silu":
		c.Act = kernels.Activation{Kind: kernels.SiLU}
	case "situ":
		c.Act = kernels.Activation{Kind: kernels.SiTU, Beta: 4, LinearBeta: 25}
		if t.SituBeta != nil {
			c.Act.Beta = float32(*t.SituBeta)
		}
		if t.SituLinearBeta != nil {
			c.Act.LinearBeta = float32(*t.SituLinearBeta)
		}
		if !(c.Act.Beta > 0) || !(c.Act.LinearBeta > 0) {
			errs = append(errs, "activation_situ_beta and activation_situ_linear_beta must be positive")
		}
	default:
		errs = append(errs, fmt.Sprintf("hidden_act %q (want silu or situ)", act))
	}
	if q := t.Quant; q != nil {
		if q.Format != "mxfp4-pack-quantized" || q.QuantMethod != "compressed-tensors" {
			errs = append(errs, fmt.Sprintf("quantization_config %s/%s (only compressed-tensors mxfp4-pack-quantized)", q.QuantMethod, q.Format))
		}
		for name, g := range q.Groups {
			w := g.Weights
			if w.GroupSize != kernels.MXFP4GroupSize || w.NumBits != 4 || w.Type != "float" {
				errs = append(errs, fmt.Sprintf("quantization group %s: group_size %d, %d bits, type %q (want 32, 4, float)", name, w.GroupSize, w.NumBits, w.Type))
			}
		}
		c.ExpertsMXFP4 = true
	}
	c.Kinds = make([]layerKind, c.Layers)
	if l := t.Linear; l != nil {
		c.KDAHeads = req("linear_attn_config.num_heads", l.NumHeads, 1)
		c.KDAHeadDim = req("linear_attn_config.head_dim", l.HeadDim, 1)
		c.ConvSize = req("linear_attn_config.short_conv_kernel_size", l.ConvSize, 1)
		c.FullRankGate = optBool(l.FullRankGate, false)
		if l.GateLowerBound != nil {
			lb := float32(*l.GateLowerBound)
			c.GateLowerBound = &lb
		}
		seen := make([]int, c.Layers)
		mark := func(list []int, k layerKind, name string) {
			for _, n := range list {
				if n < 1 || n > c.Layers {
					errs = append(errs, fmt.Sprintf("%s names layer %d outside 1..%d", name, n, c.Layers))
					continue
				}
				seen[n-1]++
				c.Kinds[n-1] = k
			}
		}
		mark(l.KDALayers, layerKDA, "kda_layers")
		mark(l.FullAttnLayers, layerMLA, "full_attn_layers")
		for i, n := range seen {
			if n != 1 {
				errs = append(errs, fmt.Sprintf("layer %d (1-based) is listed %d times in kda_layers/full_attn_layers, want once", i+1, n))
				break
			}
		}
	} else {
		for i := range c.Kinds {
			c.Kinds[i] = layerMLA
		}
	}
	if c.ExpertsMXFP4 && c.Experts > 0 {
		if c.ExpertDim()%kernels.MXFP4GroupSize != 0 || c.MoEIntermediate%kernels.MXFP4GroupSize != 0 {
			errs = append(errs, fmt.Sprintf("MXFP4 experts need widths that are multiples of 32, have %d and %d", c.ExpertDim(), c.MoEIntermediate))
		}
	}
	if math.IsNaN(float64(c.Eps)) || c.Eps <= 0 {
		errs = append(errs, "rms_norm_eps must be positive")
	}
	if len(errs) > 0 {
		return nil, errors.New(joinErrs(errs))
	}
	return c, nil
}

func joinErrs(errs []string) string {
	s := errs[0]
	for _, e := range errs[1:] {
		s += "; " + e
	}
	return s
}
