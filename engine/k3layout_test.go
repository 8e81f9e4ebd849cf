package engine

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/checkpoint/safetensors"
)

// The full-size K3 layout without its weights: K3's config.json (the
// dimensions of docs/MODEL.md, on testdata/k3-tiny/config.json's schema),
// 96 shards named as K3's whose headers list all 497,220 tensors with
// their real names, dtypes, shapes and offsets, and whose data sections
// are holes (the files are truncated to their full length: sparse, no
// byte of weight written), and the model.safetensors.index.json mapping
// every tensor to its shard. It exercises everything of open that reads
// no weight: the header and index parsing and the validation.

// k3Tensors is the real K3's tensor count: 494,592 expert tensors, 2,455
// layer spine tensors, 5 globals, and 168 of the vision tower.
const k3Tensors = 497_220

// k3Config returns K3's config.json: k3-tiny's (the same schema) with the
// real model's dimensions and layer schedule.
func k3Config(tb testing.TB) []byte {
	b, err := os.ReadFile(filepath.Join("..", "testdata", "k3-tiny", "config.json"))
	require.NoError(tb, err)
	var root map[string]any
	require.NoError(tb, json.Unmarshal(b, &root))
	text := root["text_config"].(map[string]any)
	var kda, mla []int
	for i := range 93 {
		if (i+1)%4 == 0 || i == 92 {
			mla = append(mla, i+1)
		} else {
			kda = append(kda, i+1)
		}
	}
	for k, v := range map[string]any{
		"vocab_size": 163840, "hidden_size": 7168, "num_hidden_layers": 93, "intermediate_size": 33792,
		"moe_intermediate_size": 3072, "routed_expert_hidden_size": 3584, "num_experts": 896,
		"num_experts_per_token": 16, "routed_scaling_factor": 1.0, "num_attention_heads": 96,
		"num_key_value_heads": 96, "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128,
		"qk_rope_head_dim": 64, "v_head_dim": 128, "attn_res_block_size": 12,
		"bos_token_id": 163584, "eos_token_id": 163586, "pad_token_id": 163839,
	} {
		text[k] = v
	}
	lin := text["linear_attn_config"].(map[string]any)
	lin["head_dim"], lin["num_heads"], lin["kda_layers"], lin["full_attn_layers"] = 128, 96, kda, mla
	root["bos_token_id"], root["eos_token_id"], root["pad_token_id"] = 163584, 163586, 163839
	out, err := json.MarshalIndent(root, "", "  ")
	require.NoError(tb, err)
	return out
}

// k3VisionTensors stands for the 168 tensors of the vision tower and
// projector (no language_model. prefix; the engine ignores them): 14
// blocks of 12.
func k3VisionTensors() []safetensors.Tensor {
	var ts []safetensors.Tensor
	for blk := range 14 {
		p := fmt.Sprintf("vision_tower.encoder.blocks.%d.", blk)
		for _, n := range []string{"attn.qkv", "attn.proj", "mlp.fc1", "mlp.fc2"} {
			ts = append(ts,
				safetensors.Tensor{Name: p + n + ".weight", DType: "BF16", Shape: []int64{1152, 1152}},
				safetensors.Tensor{Name: p + n + ".bias", DType: "BF16", Shape: []int64{1152}})
		}
		for _, n := range []string{"norm0", "norm1"} {
			ts = append(ts,
				safetensors.Tensor{Name: p + n + ".weight", DType: "F32", Shape: []int64{1152}},
				safetensors.Tensor{Name: p + n + ".bias", DType: "F32", Shape: []int64{1152}})
		}
	}
	return ts
}

// writeK3Layout writes the layout into dir and returns the number of
// tensors in its headers. Shard 1 holds the globals but lm_head and layer
// 0 (dense), shards 2..93 one MoE layer each (its spine, then its 896
// experts), shard 94 lm_head, 95 and 96 the vision tower; inside a shard
// tensors lie in name order, as safetensors writes them (so experts.10
// comes before experts.2).
func writeK3Layout(tb testing.TB, dir string) int {
	cfgJSON := k3Config(tb)
	require.NoError(tb, os.WriteFile(filepath.Join(dir, "config.json"), cfgJSON, 0o600))
	c, err := parseConfig(cfgJSON)
	require.NoError(tb, err)
	const shards = 96
	files := make([][]safetensors.Tensor, shards)
	for s := range c.roster() {
		dt := "BF16"
		switch {
		case s.class == u8Tensor:
			dt = "U8"
		case strings.HasSuffix(s.name, "A_log"), strings.HasSuffix(s.name, "dt_bias"), strings.HasSuffix(s.name, "conv1d.weight"),
			strings.HasSuffix(s.name, "o_norm.weight"), strings.HasSuffix(s.name, "e_score_correction_bias"):
			dt = "F32"
		}
		shard := 0
		if s.name == "lm_head.weight" {
			shard = 93
		} else if l, ok := ckpt.LayerOf(s.name, c.Layers); ok && l > 0 {
			shard = l
		}
		files[shard] = append(files[shard], safetensors.Tensor{Name: ckpt.TextPrefix + s.name, DType: dt, Shape: s.shape})
	}
	vision := k3VisionTensors()
	files[94], files[95] = vision[:84], vision[84:]
	weights := map[string]string{}
	n := 0
	for i, ts := range files {
		name := fmt.Sprintf("model-%05d-of-%06d.safetensors", i+1, shards)
		slices.SortFunc(ts, func(a, b safetensors.Tensor) int { return strings.Compare(a.Name, b.Name) })
		h := safetensors.Encode(ts)
		f, err := os.Create(filepath.Join(dir, name))
		require.NoError(tb, err)
		_, err = f.Write(h)
		require.NoError(tb, err)
		// The data section is a hole: the file's length is the real one,
		// its weights never written.
		require.NoError(tb, f.Truncate(ts[len(ts)-1].End()))
		require.NoError(tb, f.Close())
		for _, t := range ts {
			weights[t.Name] = name
		}
		n += len(ts)
	}
	idx, err := json.MarshalIndent(map[string]any{"metadata": map[string]any{"total_size": 0}, "weight_map": weights}, "", "  ")
	require.NoError(tb, err)
	require.NoError(tb, os.WriteFile(filepath.Join(dir, indexFile), idx, 0o600))
	return n
}

// k3LayoutDir is one generated layout per test binary run, shared by the
// benchmark's rounds.
func k3LayoutDir(tb testing.TB) string {
	dir := tb.TempDir()
	require.Equal(tb, k3Tensors, writeK3Layout(tb, dir))
	return dir
}

// BenchmarkOpenK3Index opens the full-size K3 layout's index: config,
// 96 headers (about 100 MB of JSON), model.safetensors.index.json, and the
// validation of every tensor against the config (the expert spans
// included): everything Open does before it reads a weight.
//
//	go test ./engine -run '^$' -bench OpenK3Index -benchtime 3x
func BenchmarkOpenK3Index(b *testing.B) {
	dir := k3LayoutDir(b)
	b.ReportAllocs()
	// The CPU time too (the process's, garbage collection included): on a
	// machine shared with other work the wall time is whatever share of
	// the cores the benchmark gets.
	cpu := func() float64 {
		var ru unix.Rusage
		require.NoError(b, unix.Getrusage(unix.RUSAGE_SELF, &ru))
		return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
	}
	start, n := cpu(), 0
	for b.Loop() {
		c, ck, err := openIndex(b.Context(), dir, ckpt.OpenFile)
		require.NoError(b, err)
		require.Len(b, ck.experts, 92*896)
		require.Equal(b, 93, c.Layers)
		ck.close()
		n++
	}
	b.ReportMetric((cpu()-start)/float64(n), "cpu-s/op")
}
