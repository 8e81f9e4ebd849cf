package bench

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTraceHitRates replays the committed k3-tiny trace: every selection
// is demanded once, a bigger cache hits at least as often, and a cache
// holding every expert misses only each expert's first use.
func TestTraceHitRates(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "testdata", "k3-tiny")
	trace := filepath.Join("..", "testdata", "traces", "k3-tiny-france-256.jsonl")
	lines, err := ReadTrace(trace)
	require.NoError(t, err)
	var selections int64
	distinct := map[[2]int]bool{}
	for _, l := range lines {
		selections += int64(len(l.Experts))
		for _, e := range l.Experts {
			distinct[[2]int{l.Layer, e}] = true
		}
	}
	runs, err := TraceHitRates(t.Context(), dir, []string{trace}, []int{8, 64, 288}, []int{-1, 16})
	require.NoError(t, err)
	require.Len(t, runs, 6)
	for _, r := range runs {
		require.Equal(t, selections, r.Demanded)
		t.Logf("cache %d, half-life %d: hit rate %.3f", r.CacheExperts, r.HalfLife, r.HitRate)
	}
	require.LessOrEqual(t, runs[0].Hits, runs[2].Hits)
	require.Equal(t, selections-int64(len(distinct)), runs[4].Hits, "a cache of every expert")
	require.Equal(t, runs[4].Hits, runs[5].Hits)
}
