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

// DELTAFIN_KERNELS picks the engine's backend; every backend this machine
// has generates the reference's greedy tokens on k3-tiny.
func TestRunUsesDeltafinKernels(t *testing.T) {
	t.Parallel()
	prompt := ints(reference(t, "text.input_ids"))
	want := ints(reference(t, "text.greedy_tokens"))
	for _, name := range append([]string{"auto"}, kernels.Available()...) {
		t.Run(name, func(t *testing.T) {
			cfg := app.DefaultConfig(func(k string) string {
				return map[string]string{"DELTAFIN_KERNELS": name}[k]
			})
			cfg.DataDir = t.TempDir() // Run keeps the expert heat histogram there
			require.NoError(t, cfg.Validate())
			cfg.Run = app.RunConfig{Temperature: greedy(), Model: filepath.Join("..", "testdata", "k3-tiny"), IDs: prompt, MaxNew: len(want), JSON: true}
			var stdout, stderr bytes.Buffer
			require.NoError(t, runPrompt(t.Context(), cfg, &stdout, &stderr))
			var out RunOutput
			require.NoError(t, json.Unmarshal(stdout.Bytes(), &out))
			require.Equal(t, want, out.IDs)
			if name == "auto" {
				name = kernels.Default().Name()
			}
			require.Equal(t, name, out.Stats.Backend)
		})
	}
}
