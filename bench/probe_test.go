package bench

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/experts"
)

// TestProbeReadsThroughTheStore drives k3-tiny's routed experts through a
// Probe as bench slice's synthetic loops do: a cold read, the same experts
// again from the cache, a step that prefetches the next layer's and
// computes, and Stats counting each.
func TestProbeReadsThroughTheStore(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "testdata", "k3-tiny")
	_, err := openProbe(t.Context(), dir, probeOptions{Mode: "sideways"})
	require.ErrorContains(t, err, `unknown I/O mode "sideways"`)
	p, err := openProbe(t.Context(), dir, probeOptions{Mode: "buffered", CacheExperts: 4})
	require.NoError(t, err)
	defer p.Close()
	span := ckpt.ExpertSpanSize(64, 64) // k3-tiny's
	require.NoError(t, p.Read(t.Context(), 1, []int{0, 1, 2, 3}))
	st := p.Stats()
	require.Equal(t, int64(4), st.Misses)
	require.GreaterOrEqual(t, st.DiskBytes, 4*span/2, "four spans read")
	require.Equal(t, 4, st.CachedNow)

	require.NoError(t, p.Step(t.Context(), 1, []int{0, 1, 2, 3}, 2, []int{5, 6}, false))
	d := p.Stats().Sub(st)
	require.Equal(t, int64(4), d.CacheHits, "served from the cache")
	require.Equal(t, int64(2), d.SpecReads)
	require.NoError(t, p.Step(t.Context(), 2, []int{5, 6}, -1, nil, false))
	require.Equal(t, int64(2), p.Stats().Sub(st).SpecHits+p.Stats().Sub(st).Shared, "the prefetched experts are used")
	require.NoError(t, p.Close())
	require.ErrorIs(t, p.Read(t.Context(), 1, []int{0}), experts.ErrClosed)
}
