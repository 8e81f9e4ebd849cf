package cli

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/app"
)

// TestRunWithTheDrafter: deltafin run --drafter DIR drafts with the tiny
// EAGLE-3.1 drafter and gives k3-tiny's reference tokens greedily (the
// independent NumPy oracle's), and the same seeded sample as --drafter off.
func TestRunWithTheDrafter(t *testing.T) {
	t.Parallel()
	prompt := ints(reference(t, "text.input_ids"))
	var stats []RunStats
	run := func(drafter string, temperature *float64, seed int64) []int {
		cfg := app.DefaultConfig(func(string) string { return "" })
		cfg.DataDir = t.TempDir()
		cfg.Drafter = drafter
		cfg.Run = app.RunConfig{Temperature: temperature, Seed: &seed,
			Model: filepath.Join("..", "testdata", "k3-tiny"), IDs: prompt, MaxNew: 16, JSON: true}
		var stdout, stderr bytes.Buffer
		require.NoError(t, runPrompt(t.Context(), cfg, &stdout, &stderr))
		var out RunOutput
		require.NoError(t, json.Unmarshal(stdout.Bytes(), &out))
		stats = append(stats, out.Stats)
		return out.IDs
	}
	dir := filepath.Join("..", "testdata", "k3-tiny-eagle3")
	require.Equal(t, ints(reference(t, "text.greedy_tokens")), run(dir, greedy(), 0))
	require.Equal(t, "ngram+eagle3", stats[0].Draft, "run --json names the drafter")
	require.Positive(t, stats[0].Drafted, "and counts its drafts")
	require.Equal(t, run("off", nil, 11), run(dir, nil, 11), "seeded sampling (the default temperature 1, top_p 0.95)")

	_, err := func() ([]int, error) {
		cfg := app.DefaultConfig(func(string) string { return "" })
		cfg.DataDir = t.TempDir()
		cfg.Drafter = t.TempDir() // no drafter there
		cfg.Run = app.RunConfig{Model: filepath.Join("..", "testdata", "k3-tiny"), IDs: prompt, MaxNew: 2}
		return nil, runPrompt(t.Context(), cfg, &bytes.Buffer{}, &bytes.Buffer{})
	}()
	require.ErrorContains(t, err, "open the drafter")
}
