package engine

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
	_, err := OpenProbe(t.Context(), dir, ProbeOptions{Mode: "sideways"})
	require.ErrorContains(t, err, `unknown I/O mode "sideways"`)
	p, err := OpenProbe(t.Context(), dir, ProbeOptions{Mode: "buffered", CacheExperts: 4})
	require.NoError(t, err)
	defer p.Close()
	span := ckpt.ExpertSpanSize(p.inter, p.latent)
	require.NoError(t, p.Read(t.Context(), 1, []int{0, 1, 2, 3}))
	st := p.Stats()
	require.Equal(t, int64(4), st.Misses)
	require.GreaterOrEqual(t, st.ExpertBytes, 4*span/2, "four spans read")
	require.Equal(t, 4, st.CachedExperts)

	require.NoError(t, p.Step(t.Context(), 1, []int{0, 1, 2, 3}, 2, []int{5, 6}, true))
	d := p.Stats().Sub(st)
	require.Equal(t, int64(4), d.CacheHits, "served from the cache")
	require.Equal(t, int64(2), d.PrefetchReads)
	require.NoError(t, p.Step(t.Context(), 2, []int{5, 6}, -1, nil, false))
	require.Equal(t, int64(2), p.Stats().Sub(st).PrefetchHits+p.Stats().Sub(st).Shared, "the prefetched experts are used")
	require.NoError(t, p.Close())
	require.ErrorIs(t, p.Read(t.Context(), 1, []int{0}), experts.ErrClosed)
}

// TestModelStatsAndReadPass opens k3-tiny with every layer streamed and no
// expert cache: a decode counts spine and expert bytes, and ReadPass reads
// one more pass's worth without computing.
func TestModelStatsAndReadPass(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "testdata", "k3-tiny")
	inRAM, err := Open(t.Context(), dir, Options{})
	require.NoError(t, err)
	require.Zero(t, inRAM.Stats(), "a model in RAM reads nothing after Open")
	require.ErrorIs(t, inRAM.ReadPass(t.Context(), func(int) []int { return []int{0} }), ErrConfig)
	require.NoError(t, inRAM.Close())

	m, err := Open(t.Context(), dir, Options{Stream: &StreamOptions{Plan: &BudgetPlan{}}})
	require.NoError(t, err)
	defer m.Close()
	info := m.Info()
	require.Positive(t, info.SpineBytes)
	_, err = m.NewSession().Forward(t.Context(), []int{1, 2, 3}, false)
	require.NoError(t, err)
	st := m.Stats()
	require.Positive(t, st.SpineBytes, "every layer streamed")
	require.Positive(t, st.ExpertBytes)
	require.Positive(t, st.Demanded())
	require.Equal(t, st.ExpertBytes+st.SpineBytes, st.DiskBytes())

	moe := 0
	for i := range info.Layers {
		if m.cfg.IsMoE(i) {
			moe++
		}
	}
	var asked []int
	require.NoError(t, m.ReadPass(t.Context(), func(layer int) []int {
		asked = append(asked, layer)
		return []int{0, 1}
	}))
	require.Len(t, asked, moe, "one route per MoE layer")
	d := m.Stats().Sub(st)
	require.Positive(t, d.SpineBytes)
	require.Equal(t, int64(2*moe), d.Misses, "no cache: every expert read on demand")
	require.NoError(t, m.Close())
	require.ErrorIs(t, m.ReadPass(t.Context(), func(int) []int { return []int{0} }), ErrClosed)
}
