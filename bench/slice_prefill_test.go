package bench

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/engine"
)

// TestEnginePrefillReportsTheReadsAlone runs the prefill measurement over
// a copy of k3-tiny (its trace is written beside the shards): the prompt's
// distinct experts are replayed once without compute, and the report's
// figures hold together.
func TestEnginePrefillReportsTheReadsAlone(t *testing.T) {
	t.Parallel()
	src := filepath.Join("..", "testdata", "k3-tiny")
	dir := t.TempDir()
	entries, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644))
	}
	o := SliceBenchOptions{Dir: dir, Prefill: 24, Seed: 3}
	r, err := o.enginePrefill(t.Context(), engine.BudgetPlan{PinnedLayers: 10})
	require.NoError(t, err)
	require.Positive(t, r.DistinctExperts)
	require.Positive(t, r.ReadsAlone)
	require.InDelta(t, r.TimeToFirstToken/r.ReadsAlone, r.TTFTRatio, 1e-9)
	require.InDelta(t, r.TimeToFirstToken-r.ExpertWait, r.Compute, 1e-9)
	require.GreaterOrEqual(t, r.ExpertWait, 0.0)
	require.Positive(t, r.Open.PinnedBytes, "the pinned spine was read")
	require.Positive(t, r.PinnedGBps)

	_, err = replayPrefillReads(t.Context(), dir, map[choice]bool{{layer: 1, expert: 999}: true})
	require.Error(t, err, "an expert the checkpoint lacks")
}
