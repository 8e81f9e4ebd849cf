// Package tinydrafter writes testdata/k3-tiny-eagle3: a tiny EAGLE-3.1 MLA
// drafter (the layout of lightseekorg/kimi-k3-eagle3.1-mla, docs/DRAFTER.md)
// with random weights, sized for testdata/k3-tiny: hidden 128, vocabulary
// 1024, taps after k3-tiny's layers 1, 4 and 6 (vLLM aux ids 2, 5, 7, its
// default for a 10-layer target). Its weights come from a fixed seed, so
// Write makes the same bytes every time and a test compares them with the
// checked-in copy. gen/ is the command that writes it.
package tinydrafter

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/deltafin/deltafin/checkpoint/safetensors"
)

// Seed is the weights' random seed.
const Seed = 3

// Dimensions of the tiny drafter.
const (
	Hidden = 128 // k3-tiny's hidden_size
	Inter  = 192
	Heads  = 2
	QLora  = 32
	KVLora = 32
	Nope   = 16
	Rope   = 8
	VDim   = 16
	Vocab  = 1024 // k3-tiny's vocab_size
	Taps   = 3
)

// Config is the drafter's config.json: the fields vLLM's deepseek_eagle3.py
// and DeepseekV2MLAAttention read, with the YaRN schedule of K3's drafter
// (docs/DRAFTER.md).
const Config = `{
  "architectures": ["Eagle3DeepseekV2ForCausalLM"],
  "model_type": "deepseek_v3",
  "torch_dtype": "bfloat16",
  "hidden_size": 128,
  "intermediate_size": 192,
  "num_hidden_layers": 1,
  "num_attention_heads": 2,
  "num_key_value_heads": 2,
  "q_lora_rank": 32,
  "kv_lora_rank": 32,
  "qk_nope_head_dim": 16,
  "qk_rope_head_dim": 8,
  "v_head_dim": 16,
  "vocab_size": 1024,
  "draft_vocab_size": 1024,
  "target_hidden_size": 128,
  "hidden_act": "silu",
  "rms_norm_eps": 1e-05,
  "max_position_embeddings": 1048576,
  "rope_theta": 50000.0,
  "rope_scaling": {
    "type": "yarn",
    "factor": 32.0,
    "original_max_position_embeddings": 32768,
    "beta_fast": 32,
    "beta_slow": 1,
    "mscale": 1.0,
    "mscale_all_dim": 1.0
  },
  "fc_norm": true,
  "norm_output": true,
  "eagle_config": {"eagle_aux_hidden_state_layer_ids": [2, 5, 7]},
  "tie_word_embeddings": false
}
`

type tensor struct {
	name  string
	shape []int64
	norm  bool // an RMSNorm weight: 1 + small noise
}

// Roster is the checkpoint's tensors in file order.
func Roster() []tensor {
	H := int64(Hidden)
	t := func(name string, shape ...int64) tensor { return tensor{name: name, shape: shape} }
	n := func(name string, d int64) tensor { return tensor{name: name, shape: []int64{d}, norm: true} }
	p := "layers.0."
	r := []tensor{t("embed_tokens.weight", Vocab, H), t("fc.weight", H, Taps*H)}
	for i := range Taps {
		r = append(r, n(fmt.Sprintf("fc_norm.%d.weight", i), H))
	}
	return append(r,
		n(p+"hidden_norm.weight", H),
		n(p+"input_layernorm.weight", H),
		t(p+"self_attn.q_a_proj.weight", QLora, 2*H),
		n(p+"self_attn.q_a_layernorm.weight", QLora),
		t(p+"self_attn.q_b_proj.weight", Heads*(Nope+Rope), QLora),
		t(p+"self_attn.kv_a_proj_with_mqa.weight", KVLora+Rope, 2*H),
		n(p+"self_attn.kv_a_layernorm.weight", KVLora),
		t(p+"self_attn.kv_b_proj.weight", Heads*(Nope+VDim), KVLora),
		t(p+"self_attn.o_proj.weight", H, Heads*VDim),
		n(p+"post_attention_layernorm.weight", H),
		t(p+"mlp.gate_proj.weight", Inter, H),
		t(p+"mlp.up_proj.weight", Inter, H),
		t(p+"mlp.down_proj.weight", H, Inter),
		n("norm.weight", H),
		t("lm_head.weight", Vocab, H),
	)
}

// Checkpoint returns model.safetensors: BF16 tensors, matrices with
// entries N(0, 1/in) so activations keep their scale, norms 1 ± 0.05.
func Checkpoint() []byte {
	rng := rand.New(rand.NewPCG(Seed, 0))
	ro := Roster()
	ts := make([]safetensors.Tensor, len(ro))
	for i, t := range ro {
		ts[i] = safetensors.Tensor{Name: t.name, DType: "BF16", Shape: t.shape}
	}
	out := safetensors.Encode(ts)
	for _, t := range ro {
		n := int64(1)
		for _, d := range t.shape {
			n *= d
		}
		sd := 1 / math.Sqrt(float64(t.shape[len(t.shape)-1]))
		for range n {
			v := rng.NormFloat64() * sd
			if t.norm {
				v = 1 + 0.05*rng.NormFloat64()
			}
			out = binary.LittleEndian.AppendUint16(out, bf16(float32(v)))
		}
	}
	return out
}

// bf16 rounds to bfloat16, to nearest even (the values are finite).
func bf16(f float32) uint16 {
	b := math.Float32bits(f)
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}

// Write writes config.json and model.safetensors into dir.
func Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(Config), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "model.safetensors"), Checkpoint(), 0o644)
}
