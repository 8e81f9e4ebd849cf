package engine

import (
	"fmt"
	"iter"
	"maps"
	"slices"
	"sort"
	"strings"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/checkpoint/safetensors"
)

// dtypeClass is the set of dtypes a tensor may be stored in.
type dtypeClass uint8

const (
	floatTensor dtypeClass = iota // BF16, F16 or F32, widened exactly
	u8Tensor                      // MXFP4 packed nibbles or e8m0 scales
)

func (c dtypeClass) allows(dt string) bool {
	if c == u8Tensor {
		return dt == "U8"
	}
	_, ok := matrixDType(dt)
	return ok
}

func (c dtypeClass) String() string {
	if c == u8Tensor {
		return "U8"
	}
	return "BF16, F16 or F32"
}

// tensorSpec is one tensor the config says the checkpoint must have.
type tensorSpec struct {
	name  string
	class dtypeClass
	shape []int64
}

// roster yields every tensor of the text model in a fixed order: globals,
// then each layer's spine, then its routed experts. It is lazy because a
// hostile config can describe billions of tensors; validation stops at the
// first one the checkpoint lacks.
func (c *config) roster() iter.Seq[tensorSpec] {
	return func(yield func(tensorSpec) bool) { c.eachTensor(yield) }
}

func (c *config) eachTensor(yield func(tensorSpec) bool) {
	ok := true
	emit := func(s tensorSpec) {
		if ok {
			ok = yield(s)
		}
	}
	add := func(name string, shape ...int) {
		s := make([]int64, len(shape))
		for i, d := range shape {
			s[i] = int64(d)
		}
		emit(tensorSpec{name, floatTensor, s})
	}
	H := c.Hidden
	add("model.embed_tokens.weight", c.Vocab, H)
	add("model.norm.weight", H)
	if !c.TieEmbeddings {
		add("lm_head.weight", c.Vocab, H)
	}
	if c.AttnResBlock > 0 {
		add("model.output_attn_res_norm.weight", H)
		add("model.output_attn_res_proj.weight", 1, H)
	}
	for i := 0; i < c.Layers && ok; i++ {
		p := ckpt.LayerPrefix(i)
		add(p+"input_layernorm.weight", H)
		add(p+"post_attention_layernorm.weight", H)
		if c.AttnResBlock > 0 {
			add(p+"self_attention_res_norm.weight", H)
			add(p+"self_attention_res_proj.weight", 1, H)
			add(p+"mlp_res_norm.weight", H)
			add(p+"mlp_res_proj.weight", 1, H)
		}
		a := p + "self_attn."
		switch c.Kinds[i] {
		case layerKDA:
			nh, d := c.KDAHeads, c.KDAHeadDim
			P := nh * d
			for _, x := range []string{"q", "k", "v"} {
				add(a+x+"_proj.weight", P, H)
				add(a+x+"_conv1d.weight", P, 1, c.ConvSize)
			}
			if c.GateLowerBound != nil {
				add(a+"A_log", d) // K3: flat [head_dim], one rate per head in [0:nh], zero padding after (weights.go aLog)
			} else {
				add(a+"A_log", 1, 1, nh, 1) // Kimi-Linear: per head
			}
			add(a+"dt_bias", P)
			add(a+"f_a_proj.weight", d, H)
			add(a+"f_b_proj.weight", P, d)
			add(a+"b_proj.weight", nh, H)
			if c.FullRankGate {
				add(a+"g_proj.weight", P, H)
			} else {
				add(a+"g_a_proj.weight", d, H)
				add(a+"g_b_proj.weight", P, d)
			}
			add(a+"o_norm.weight", d)
			add(a+"o_proj.weight", H, P)
		case layerMLA:
			qk := c.NoPE + c.RoPE
			if c.QLoRA > 0 {
				add(a+"q_a_proj.weight", c.QLoRA, H)
				add(a+"q_a_layernorm.weight", c.QLoRA)
				add(a+"q_b_proj.weight", c.Heads*qk, c.QLoRA)
			} else {
				add(a+"q_proj.weight", c.Heads*qk, H)
			}
			add(a+"kv_a_proj_with_mqa.weight", c.KVLoRA+c.RoPE, H)
			add(a+"kv_a_layernorm.weight", c.KVLoRA)
			add(a+"kv_b_proj.weight", c.Heads*(c.NoPE+c.VHead), c.KVLoRA)
			if c.MLAOutputGate {
				add(a+"g_proj.weight", c.Heads*c.VHead, H)
			}
			add(a+"o_proj.weight", H, c.Heads*c.VHead)
		}
		if !c.IsMoE(i) {
			add(p+"mlp.gate_proj.weight", c.Intermediate, H)
			add(p+"mlp.up_proj.weight", c.Intermediate, H)
			add(p+"mlp.down_proj.weight", H, c.Intermediate)
			continue
		}
		m := p + "block_sparse_moe."
		add(m+"gate.weight", c.Experts, H)
		add(m+"gate.e_score_correction_bias", c.Experts)
		if c.Latent > 0 {
			add(m+"routed_expert_down_proj.weight", c.Latent, H)
			if c.LatentNorm {
				add(m+"routed_expert_norm.weight", c.Latent)
			}
			add(m+"routed_expert_up_proj.weight", H, c.Latent)
		}
		if c.SharedExperts > 0 {
			s := c.SharedExperts * c.MoEIntermediate
			add(m+"shared_experts.gate_proj.weight", s, H)
			add(m+"shared_experts.up_proj.weight", s, H)
			add(m+"shared_experts.down_proj.weight", H, s)
		}
		D, I := int64(c.ExpertDim()), int64(c.MoEIntermediate)
		// ExpertParts order: w1 (gate) and w3 (up) are [I, D], w2 (down)
		// [D, I]; packed nibbles are half a byte per weight, scales one
		// byte per MXFP4Group weights.
		const g = ckpt.MXFP4Group
		mx := ckpt.ExpertParts()
		mxShapes := [6][]int64{{I, D / 2}, {I, D / g}, {D, I / 2}, {D, I / g}, {I, D / 2}, {I, D / g}}
		fl := ckpt.FloatExpertParts()
		flShapes := [3][2]int{{int(I), int(D)}, {int(D), int(I)}, {int(I), int(D)}}
		for e := 0; e < c.Experts && ok; e++ {
			ep := ckpt.ExpertPrefix(i, e)
			if c.ExpertsMXFP4 {
				for k, part := range mx {
					emit(tensorSpec{ep + part, u8Tensor, mxShapes[k]})
				}
			} else {
				for k, part := range fl {
					add(ep+part, flShapes[k][0], flShapes[k][1])
				}
			}
		}
	}
}

// check is the first way the checkpoint's tensor s.name differs from s:
// missing, then its dtype, then its shape.
func (ck *checkpoint) check(s tensorSpec) error {
	r := ck.tensors[s.name]
	if r == nil {
		return ck.missing(s.name)
	}
	if !s.class.allows(r.t.DType) {
		return r.errorf("dtype %s, want %s", r.t.DType, s.class)
	}
	if !slices.Equal(r.t.Shape, s.shape) {
		return r.errorf("shape %v, want %v", r.t.Shape, s.shape)
	}
	return nil
}

// validate checks the checkpoint against the config and returns the first
// violation: a missing, mis-typed or mis-shaped tensor in roster order, then
// an unexpected tensor (by name), then an MXFP4 expert whose six tensors are
// not back to back in one file (ckpt.IndexExperts, whose spans it keeps in
// ck.experts).
func (ck *checkpoint) validate(c *config) error {
	found := 0 // the roster's names are distinct: count instead of keeping a set
	for s := range c.roster() {
		if err := ck.check(s); err != nil {
			return err
		}
		found++
	}
	if found < len(ck.tensors) {
		want := make(map[string]bool, found)
		for s := range c.roster() {
			want[s.name] = true
		}
		var extra []string
		for name := range ck.tensors {
			if !want[name] {
				extra = append(extra, name)
			}
		}
		sort.Strings(extra)
		r := ck.tensors[extra[0]]
		return r.errorf("unexpected tensor (not part of this config's model; %d unexpected in all)", len(extra))
	}
	if !c.ExpertsMXFP4 {
		return nil
	}
	// Every tensor is now the roster's, so the experts IndexExperts finds
	// are exactly the config's.
	ck.experts = make(map[ckpt.ExpertID]ckpt.ExpertSpan, c.Experts*c.Layers)
	for _, s := range ck.shards {
		text := s.hdr
		if ck.prefix != "" && slices.ContainsFunc(s.hdr.Tensors, func(t safetensors.Tensor) bool { return !strings.HasPrefix(t.Name, ck.prefix) }) {
			text = &safetensors.Header{DataStart: s.hdr.DataStart} // without the vision tower's
			for _, t := range s.hdr.Tensors {
				if strings.HasPrefix(t.Name, ck.prefix) {
					text.Tensors = append(text.Tensors, t)
				}
			}
		}
		spans, err := ckpt.IndexExperts(s.name, text)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrCheckpoint, err)
		}
		maps.Copy(ck.experts, spans)
	}
	return nil
}
