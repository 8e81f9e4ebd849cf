//go:build linux && cgo

package cli

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/app"
	"github.com/deltafin/deltafin/kernels"
)

// On this machine (make deps installs Mesa's lavapipe) the Vulkan backend
// is present: bench kernels reports it, and "gpu" selects it.
func TestVulkanBackendPresent(t *testing.T) {
	t.Parallel()
	require.Contains(t, kernels.Registered(), "vulkan")
	b, err := kernels.ByName("gpu")
	require.NoError(t, err)
	require.Equal(t, "vulkan+"+kernels.Default().Name(), b.Name(), "prefill on the GPU, decode on the CPU")
	cfg := app.DefaultConfig(func(k string) string { return map[string]string{"DELTAFIN_KERNELS": "vulkan"}[k] })
	require.NoError(t, cfg.Validate())
}

// DELTAFIN_KERNELS=gpu: prefill on Vulkan, decode on the CPU; the greedy
// tokens are the reference's.
func TestRunOnGPUPrefill(t *testing.T) {
	t.Parallel()
	prompt := ints(reference(t, "text.input_ids"))
	want := ints(reference(t, "text.greedy_tokens"))
	cfg := app.DefaultConfig(func(k string) string { return map[string]string{"DELTAFIN_KERNELS": "gpu"}[k] })
	require.NoError(t, cfg.Validate())
	cfg.Run = app.RunConfig{Temperature: greedy(), Model: filepath.Join("..", "testdata", "k3-tiny"), IDs: prompt, MaxNew: len(want), JSON: true}
	var stdout, stderr bytes.Buffer
	require.NoError(t, runPrompt(t.Context(), cfg, &stdout, &stderr))
	var out RunOutput
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &out))
	require.Equal(t, want, out.IDs)
	require.Equal(t, "vulkan+"+kernels.Default().Name(), out.Stats.Backend)
}
