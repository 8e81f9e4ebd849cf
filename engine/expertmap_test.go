package engine

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	ckpt "github.com/deltafin/deltafin/checkpoint"
)

// partSource is a local file that says a shard is missing (as a stream
// install's sparse shard would): Ensure has nothing to fetch, Present says
// no for every byte of it.
type partSource struct {
	ckpt.Source
	missing bool
}

func (p partSource) Ensure(context.Context, int64, int64) error { return nil }
func (p partSource) Present(int64, int64) bool                  { return !p.missing }

func TestExpertMap(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "testdata", "k3-tiny")
	const missingShard = "model-00003-of-000004.safetensors"
	open := func(ctx context.Context, path string) (ckpt.Source, error) {
		s, err := ckpt.OpenFile(ctx, path)
		if err != nil {
			return nil, err
		}
		return partSource{s, strings.HasSuffix(path, missingShard)}, nil
	}
	m, err := Open(t.Context(), dir, Options{OpenSource: open,
		Stream: &StreamOptions{Plan: &BudgetPlan{PinnedLayers: 1 << 20, CacheExperts: 6}}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, m.Close()) })

	em := m.ExpertMap()
	require.Equal(t, m.Info().Experts, em.Experts)
	var moe []int
	for i := range m.cfg.Layers {
		if m.cfg.IsMoE(i) {
			moe = append(moe, i)
		}
	}
	require.Equal(t, moe, em.Layers)
	require.Len(t, em.OnDisk, len(moe)*em.Experts)
	missing := 0
	for li, layer := range em.Layers {
		for e := range em.Experts {
			sp := m.ck.experts[ckpt.ExpertID{Layer: layer, Expert: e}]
			require.Equal(t, sp.Shard != missingShard, em.OnDisk[li*em.Experts+e], "layer %d expert %d in %s", layer, e, sp.Shard)
			if !em.OnDisk[li*em.Experts+e] {
				missing++
			}
		}
	}
	require.Positive(t, missing, "the test shard holds experts")
	require.NotContains(t, em.Cached, true, "nothing is cached before a token")

	// A few tokens: the cache fills and the heat counts the selections.
	_, err = m.NewSession().Generate(t.Context(), []int{1, 2, 3}, GenerateOptions{MaxNew: 3}, func(int) error { return nil })
	require.NoError(t, err)
	em = m.ExpertMap()
	cached := 0
	for _, c := range em.Cached {
		if c {
			cached++
		}
	}
	require.Equal(t, m.Stats().CachedExperts, cached)
	require.Positive(t, cached)
	hot := 0
	for _, h := range em.Heat {
		if h > 0 {
			hot++
		}
	}
	require.GreaterOrEqual(t, hot, m.cfg.TopK, "at least one token's selections are counted")
}
