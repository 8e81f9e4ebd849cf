package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/internal/atomicfile"
)

// ErrNoSpace reports a slice that would not fit on the disk.
var ErrNoSpace = errors.New("bench: not enough free disk")

// K3 shapes used by the synthetic slice (docs/MODEL.md §2, §4).
const (
	k3TextPrefix = "language_model."
	layersPrefix = "model.layers."
	k3Hidden     = 7168
	k3Vocab      = 163840
	k3Experts    = 896
	k3TopK       = 16
	k3Inter      = 3072
	k3Latent     = 3584
	k3Shared     = 6144
	k3KDAHeads   = 96
	k3KDAWidth   = k3KDAHeads * 128 // heads × head dim
	k3QLora      = 1536
	k3KVLora     = 512
	k3MLAQWidth  = 96 * 192
	k3MLAKVWidth = 96 * (128 + 128)
	k3MoELayers  = 92
	k3Layers     = 93
)

// k3IsMLA reports whether zero-based layer i is an MLA layer in K3.
func k3IsMLA(i int) bool { return (i+1)%4 == 0 || i == k3Layers-1 }

// sliceShapeOffset maps a slice layer to the K3 layer whose shapes it has:
// slice layers 0 and 1 are K3 layers 2 (KDA) and 3 (MLA), so even a
// two-layer slice has both spine shapes. Every slice layer is an MoE layer
// (first_k_dense_replace 0 in its config).
const sliceShapeOffset = 2

// sliceIsMLA reports whether slice layer j has an MLA spine.
func sliceIsMLA(j int) bool { return k3IsMLA(j + sliceShapeOffset) }

// k3LayerSpine lists the spine tensors of an MoE layer numbered i, with an
// MLA or a KDA attention, in the order a slice stores them.
func k3LayerSpine(i int, mla bool) []synthTensor {
	p := ckpt.TextPrefix + ckpt.LayerPrefix(i)
	bf := func(name string, shape ...int64) synthTensor { return synthTensor{p + name, "BF16", shape, fillBF16} }
	f32 := func(name string, shape ...int64) synthTensor { return synthTensor{p + name, "F32", shape, fillF32} }
	t := []synthTensor{
		bf("input_layernorm.weight", k3Hidden), bf("self_attention_res_norm.weight", k3Hidden),
		bf("self_attention_res_proj.weight", 1, k3Hidden), bf("post_attention_layernorm.weight", k3Hidden),
		bf("mlp_res_norm.weight", k3Hidden), bf("mlp_res_proj.weight", 1, k3Hidden),
	}
	if mla {
		t = append(t,
			bf("self_attn.q_a_proj.weight", k3QLora, k3Hidden), bf("self_attn.q_a_layernorm.weight", k3QLora),
			bf("self_attn.q_b_proj.weight", k3MLAQWidth, k3QLora),
			bf("self_attn.kv_a_proj_with_mqa.weight", k3KVLora+64, k3Hidden),
			bf("self_attn.kv_a_layernorm.weight", k3KVLora), bf("self_attn.kv_b_proj.weight", k3MLAKVWidth, k3KVLora),
			bf("self_attn.g_proj.weight", k3KDAWidth, k3Hidden), bf("self_attn.o_proj.weight", k3Hidden, k3KDAWidth))
	} else {
		t = append(t,
			synthTensor{p + "self_attn.A_log", "F32", []int64{128}, fillALog}, f32("self_attn.dt_bias", k3KDAWidth),
			f32("self_attn.q_conv1d.weight", k3KDAWidth, 1, 4), f32("self_attn.k_conv1d.weight", k3KDAWidth, 1, 4),
			f32("self_attn.v_conv1d.weight", k3KDAWidth, 1, 4), f32("self_attn.o_norm.weight", 128),
			bf("self_attn.q_proj.weight", k3KDAWidth, k3Hidden), bf("self_attn.k_proj.weight", k3KDAWidth, k3Hidden),
			bf("self_attn.v_proj.weight", k3KDAWidth, k3Hidden), bf("self_attn.g_proj.weight", k3KDAWidth, k3Hidden),
			bf("self_attn.f_a_proj.weight", 128, k3Hidden), bf("self_attn.f_b_proj.weight", k3KDAWidth, 128),
			bf("self_attn.b_proj.weight", 96, k3Hidden), bf("self_attn.o_proj.weight", k3Hidden, k3KDAWidth))
	}
	return append(t,
		bf("block_sparse_moe.gate.weight", k3Experts, k3Hidden),
		f32("block_sparse_moe.gate.e_score_correction_bias", k3Experts),
		bf("block_sparse_moe.routed_expert_down_proj.weight", k3Latent, k3Hidden),
		bf("block_sparse_moe.routed_expert_norm.weight", k3Latent),
		bf("block_sparse_moe.routed_expert_up_proj.weight", k3Hidden, k3Latent),
		bf("block_sparse_moe.shared_experts.gate_proj.weight", k3Shared, k3Hidden),
		bf("block_sparse_moe.shared_experts.up_proj.weight", k3Shared, k3Hidden),
		bf("block_sparse_moe.shared_experts.down_proj.weight", k3Hidden, k3Shared))
}

// k3LayerExperts lists layer i's 896 experts, six tensors each, in the
// physical order of lexicographic names (experts.10 before experts.2), which
// is not expert-id order: the index must not assume it is.
func k3LayerExperts(i int) []synthTensor {
	ids := make([]string, k3Experts)
	for e := range ids {
		ids[e] = strconv.Itoa(e)
	}
	sort.Strings(ids)
	shapes := [6][2]int64{
		{k3Inter, k3Latent / 2}, {k3Inter, k3Latent / 32},
		{k3Latent, k3Inter / 2}, {k3Latent, k3Inter / 32},
		{k3Inter, k3Latent / 2}, {k3Inter, k3Latent / 32},
	}
	t := make([]synthTensor, 0, 6*k3Experts)
	for _, s := range ids {
		e, _ := strconv.Atoi(s)
		for part, shape := range shapes {
			fill := fillRaw
			if part%2 == 1 {
				fill = fillScale
			}
			t = append(t, synthTensor{ckpt.ExpertName(ckpt.ExpertID{Layer: i, Expert: e}, part), "U8", shape[:], fill})
		}
	}
	return t
}

// k3Globals are the tensors outside the decoder layers.
func k3Globals() []synthTensor {
	return []synthTensor{
		{"language_model.model.norm.weight", "BF16", []int64{k3Hidden}, fillBF16},
		{"language_model.model.output_attn_res_norm.weight", "BF16", []int64{k3Hidden}, fillBF16},
		{"language_model.model.output_attn_res_proj.weight", "BF16", []int64{1, k3Hidden}, fillBF16},
		{"language_model.lm_head.weight", "BF16", []int64{k3Vocab, k3Hidden}, fillBF16},
		{"language_model.model.embed_tokens.weight", "BF16", []int64{k3Vocab, k3Hidden}, fillBF16},
	}
}

func sumSize(t []synthTensor) int64 {
	var n int64
	for _, x := range t {
		n += x.size()
	}
	return n
}

// SliceLayout is a synthetic checkpoint with K3's real per-layer shapes: the
// globals (vocabulary 163840) in one shard, then one shard per MoE layer
// holding its spine and its 896 MXFP4 experts in the real contiguous layout.
type SliceLayout struct {
	Layers     []int // layer numbers, 0..n-1
	Shards     []string
	ShardBytes []int64
	// SpineBytes is each layer's spine; GlobalBytes is the embedding,
	// lm_head and the final norms (the engine keeps all of them in RAM).
	SpineBytes  []int64
	GlobalBytes int64
	TotalBytes  int64
}

func sliceShardName(i, n int) string { return fmt.Sprintf("model-%05d-of-%06d.safetensors", i+1, n) }

func sliceShardTensors(layers []int, shard int) []synthTensor {
	if shard == 0 {
		return k3Globals()
	}
	l := layers[shard-1]
	return append(k3LayerSpine(l, sliceIsMLA(l)), k3LayerExperts(l)...)
}

// NewSliceLayout describes a slice of moeLayers MoE layers.
func NewSliceLayout(moeLayers int) (SliceLayout, error) {
	if moeLayers < 1 || moeLayers > k3MoELayers {
		return SliceLayout{}, fmt.Errorf("bench: a slice has 1 to %d MoE layers, not %d", k3MoELayers, moeLayers)
	}
	var s SliceLayout
	for i := range moeLayers {
		s.Layers = append(s.Layers, i)
	}
	n := moeLayers + 1
	for i := range n {
		t := sliceShardTensors(s.Layers, i)
		h, _ := shardHeader(t)
		size := int64(len(h)) + sumSize(t)
		s.Shards = append(s.Shards, sliceShardName(i, n))
		s.ShardBytes = append(s.ShardBytes, size)
		s.TotalBytes += size
		if i > 0 {
			s.SpineBytes = append(s.SpineBytes, sumSize(k3LayerSpine(s.Layers[i-1], sliceIsMLA(s.Layers[i-1]))))
		}
	}
	s.GlobalBytes = sumSize(k3Globals())
	return s, nil
}

// SliceLayersFor returns the fewest MoE layers whose slice is at least
// bytes large.
func SliceLayersFor(bytes int64) int {
	for n := 1; n < k3MoELayers; n++ {
		if l, _ := NewSliceLayout(n); l.TotalBytes >= bytes {
			return n
		}
	}
	return k3MoELayers
}

// sliceManifest marks a complete slice; it is written last.
type sliceManifest struct {
	Format string   `json:"format"`
	Layers []int    `json:"layers"`
	Shards []string `json:"shards"`
	Bytes  []int64  `json:"bytes"`
}

const sliceFormat = "deltafin-bench-slice-v2"

// SliceMissingBytes is how much of the slice in dir is still to be written.
func (s SliceLayout) SliceMissingBytes(dir string) int64 {
	var missing int64
	for i, name := range s.Shards {
		done, _ := fileSize(filepath.Join(dir, name))
		if done != s.ShardBytes[i] {
			part, _ := fileSize(filepath.Join(dir, name+".partial"))
			done = min(part, s.ShardBytes[i]) / shardChunk * shardChunk
		}
		missing += s.ShardBytes[i] - done
	}
	return missing
}

// CreateSlice writes the slice into dir, skipping complete shards and
// resuming partial ones, and writes the manifest last. freeDisk reports the
// free bytes of dir's filesystem; the slice is refused before any write when
// what is missing, plus 2 GB of headroom, does not fit. progress receives
// byte counts as they are written.
func (s SliceLayout) CreateSlice(ctx context.Context, dir string, freeDisk func(string) (uint64, error), progress func(int64)) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if s.complete(dir) {
		return nil
	}
	missing := s.SliceMissingBytes(dir)
	free, err := freeDisk(dir)
	if err != nil {
		return err
	}
	if int64(free) < missing+2e9 {
		return fmt.Errorf("%w: the %d-layer slice needs %.2f GB more in %s, which has %.2f GB free (2 GB of headroom kept); use --moe-layers to make it smaller",
			ErrNoSpace, len(s.Layers), float64(missing)/1e9, dir, float64(free)/1e9)
	}
	for i, name := range s.Shards {
		t := sliceShardTensors(s.Layers, i)
		if err := writeSyntheticShard(ctx, filepath.Join(dir, name), t, uint64(i+1)*0xD1B54A32D192ED03, progress); err != nil {
			return err
		}
	}
	if err := s.writeConfig(dir); err != nil {
		return err
	}
	m, err := json.Marshal(sliceManifest{sliceFormat, s.Layers, s.Shards, s.ShardBytes})
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, "slice.json"), m, 0o600)
}

// writeConfig writes config.json (K3's, with the slice's layer count, every
// layer MoE, the slice's KDA/MLA schedule) and model.safetensors.index.json,
// so the engine opens the slice like any checkpoint.
func (s SliceLayout) writeConfig(dir string) error {
	var kda, mla []int
	for _, l := range s.Layers {
		if sliceIsMLA(l) {
			mla = append(mla, l+1)
		} else {
			kda = append(kda, l+1)
		}
	}
	group := map[string]any{"format": "mxfp4-pack-quantized", "weights": map[string]any{
		"dynamic": false, "group_size": 32, "num_bits": 4, "observer": "minmax", "scale_dtype": "torch.uint8",
		"strategy": "group", "symmetric": true, "type": "float"}}
	text := map[string]any{
		"model_type": "kimi_linear", "dtype": "bfloat16", "vocab_size": k3Vocab, "hidden_size": k3Hidden,
		"num_hidden_layers": len(s.Layers), "intermediate_size": 33792, "moe_intermediate_size": k3Inter,
		"routed_expert_hidden_size": k3Latent, "num_experts": k3Experts, "num_experts_per_token": k3TopK,
		"num_shared_experts": 2, "first_k_dense_replace": 0, "moe_layer_freq": 1, "num_expert_group": 1,
		"topk_group": 1, "use_grouped_topk": true, "topk_method": "noaux_tc", "moe_router_activation_func": "sigmoid",
		"moe_renormalize": true, "routed_scaling_factor": 1.0, "latent_moe_use_norm": true, "hidden_act": "situ",
		"activation_situ_beta": 4.0, "activation_situ_linear_beta": 25.0, "rms_norm_eps": 1e-5,
		"num_attention_heads": 96, "num_key_value_heads": 96, "q_lora_rank": k3QLora, "kv_lora_rank": k3KVLora,
		"qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "mla_use_nope": true,
		"mla_use_output_gate": true, "attn_res_block_size": 12, "max_position_embeddings": 1048576,
		"num_nextn_predict_layers": 0, "use_cache": true, "tie_word_embeddings": false,
		"bos_token_id": 163584, "eos_token_id": 163586, "pad_token_id": 163839,
		"linear_attn_config": map[string]any{"head_dim": 128, "num_heads": 96, "short_conv_kernel_size": 4,
			"use_full_rank_gate": true, "gate_lower_bound": -5.0, "kda_layers": kda, "full_attn_layers": mla},
		"quantization_config": map[string]any{"config_groups": map[string]any{"group_0": group},
			"format": "mxfp4-pack-quantized", "quant_method": "compressed-tensors", "quantization_status": "compressed"},
	}
	cfg, err := json.MarshalIndent(map[string]any{"model_type": "kimi_k3", "dtype": "bfloat16",
		"tie_word_embeddings": false, "bos_token_id": 163584, "eos_token_id": 163586, "pad_token_id": 163839,
		"text_config": text}, "", "  ")
	if err != nil {
		return err
	}
	weights := map[string]string{}
	for i, name := range s.Shards {
		for _, t := range sliceShardTensors(s.Layers, i) {
			weights[t.name] = name
		}
	}
	idx, err := json.Marshal(map[string]any{"metadata": map[string]any{"total_size": s.TotalBytes}, "weight_map": weights})
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o600); err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), idx, 0o600)
}

func (s SliceLayout) complete(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "slice.json"))
	if err != nil {
		return false
	}
	var m sliceManifest
	if json.Unmarshal(b, &m) != nil || m.Format != sliceFormat || len(m.Shards) != len(s.Shards) {
		return false
	}
	for i, name := range s.Shards {
		if m.Shards[i] != name || m.Bytes[i] != s.ShardBytes[i] {
			return false
		}
		if n, _ := fileSize(filepath.Join(dir, name)); n != s.ShardBytes[i] {
			return false
		}
	}
	return true
}
