package engine

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/deltafin/deltafin/kernels"
	"github.com/stretchr/testify/require"
)

func TestLoadConfig(t *testing.T) {
	t.Parallel()
	k3, err := loadConfig(filepath.Join("..", "testdata", "k3-tiny"))
	require.NoError(t, err)
	require.Equal(t, "kimi_k3", k3.ModelType)
	require.Equal(t, []layerKind{layerKDA, layerKDA, layerKDA, layerMLA, layerKDA, layerKDA, layerKDA, layerMLA, layerKDA, layerMLA}, k3.Kinds)
	require.Equal(t, float32(-5), *k3.GateLowerBound)
	require.True(t, k3.FullRankGate && k3.MLAOutputGate && k3.ExpertsMXFP4 && k3.LatentNorm)
	require.Equal(t, 48, k3.QLoRA)
	require.Equal(t, 64, k3.ExpertDim())
	require.Equal(t, 4, k3.AttnResBlock)
	require.Equal(t, kernels.Activation{Kind: kernels.SiTU, Beta: 4, LinearBeta: 25}, k3.Act)
	require.False(t, k3.IsMoE(0))
	require.True(t, k3.IsMoE(1))
	require.Equal(t, 770, k3.EOS)

	kl, err := loadConfig(filepath.Join("..", "testdata", "kimi-linear-tiny", "hf"))
	require.NoError(t, err)
	require.Equal(t, "kimi_linear", kl.ModelType)
	require.Nil(t, kl.GateLowerBound)
	require.False(t, kl.FullRankGate || kl.MLAOutputGate || kl.ExpertsMXFP4)
	require.Equal(t, 0, kl.QLoRA)
	require.Equal(t, 0, kl.AttnResBlock)
	require.Equal(t, 64, kl.ExpertDim())
	require.Equal(t, kernels.SiLU, kl.Act.Kind)
	require.Equal(t, float32(2.446), kl.RoutedScaling)
	require.Equal(t, -1, kl.EOS)
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "k3-tiny", "config.json"))
	require.NoError(t, err)
	tests := []struct {
		name   string
		change func(root, text map[string]any)
		want   string
	}{
		{"unknown model type", func(r, _ map[string]any) { r["model_type"] = "llama" }, `model_type "llama"`},
		{"kimi_k3 without text_config", func(r, _ map[string]any) { delete(r, "text_config") }, "without text_config"},
		{"missing hidden size", func(_, x map[string]any) { delete(x, "hidden_size") }, "hidden_size is missing"},
		{"layer in both lists", func(_, x map[string]any) {
			x["linear_attn_config"].(map[string]any)["kda_layers"] = []int{1, 2, 3, 4, 5, 6, 7, 9}
		}, "layer 4 (1-based) is listed 2 times"},
		{"top-k above experts", func(_, x map[string]any) { x["num_experts_per_token"] = 64 }, "num_experts_per_token 64 > num_experts 32"},
		{"rotary MLA", func(_, x map[string]any) { x["mla_use_nope"] = false }, "mla_use_nope false"},
		{"other quantization", func(_, x map[string]any) {
			x["quantization_config"].(map[string]any)["format"] = "int4-pack-quantized"
		}, "only compressed-tensors mxfp4-pack-quantized"},
		{"softmax router", func(_, x map[string]any) { x["moe_router_activation_func"] = "softmax" }, `"softmax" (only sigmoid)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var root map[string]any
			require.NoError(t, json.Unmarshal(b, &root))
			text, _ := root["text_config"].(map[string]any)
			tt.change(root, text)
			nb, err := json.Marshal(root)
			require.NoError(t, err)
			_, err = parseConfigErr(nb)
			require.ErrorIs(t, err, ErrConfig)
			require.ErrorContains(t, err, tt.want)
		})
	}
	_, err = parseConfigErr([]byte("{"))
	require.ErrorIs(t, err, ErrConfig)
}

// parseConfigErr parses a config.json body as loadConfig does, without a path.
func parseConfigErr(b []byte) (*config, error) {
	c, err := parseConfig(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrConfig, err)
	}
	return c, nil
}

// FuzzParseConfig: any config.json body gives a config or an ErrConfig,
// never a panic or a huge allocation.
func FuzzParseConfig(f *testing.F) {
	for _, p := range []string{"k3-tiny/config.json", "kimi-linear-tiny/hf/config.json"} {
		b, err := os.ReadFile(filepath.Join("..", "testdata", p))
		require.NoError(f, err)
		f.Add(b)
	}
	f.Add([]byte(`{"model_type":"kimi_linear","vocab_size":8,"hidden_size":4,"num_hidden_layers":100000000000}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := parseConfigErr(b)
		if err != nil {
			require.ErrorIs(t, err, ErrConfig)
			return
		}
		require.Len(t, c.Kinds, c.Layers)
		n := 0
		for range c.roster() {
			if n++; n == 10000 {
				break
			}
		}
	})
}
