package engine

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/experts"
	"github.com/deltafin/deltafin/internal/directio"
	"github.com/deltafin/deltafin/internal/testref"
)

// TestK3TinyStreamedGivesTheReferenceTokens runs k3-tiny through the
// streaming path (experts read per token through the expert store, spine
// layers per pass) under budgets that leave almost nothing in RAM: the
// tokens and logits must equal the reference exactly as in RAM.
func TestK3TinyStreamedGivesTheReferenceTokens(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "testdata", "k3-tiny")
	ref := loadRef(t, filepath.Join(dir, "reference.safetensors"))
	for _, tc := range []struct {
		name   string
		stream StreamOptions
		pinned int
	}{
		{"expert cache of 2, every layer pinned", StreamOptions{Plan: &experts.BudgetPlan{PinnedLayers: 1 << 20, CacheExperts: 2}}, 10},
		{"zero pinned layers, no expert cache", StreamOptions{Plan: &experts.BudgetPlan{PinnedLayers: 0, CacheExperts: 0}}, 0},
		{"buffered reads, 3 pinned layers", StreamOptions{mode: directio.Buffered, Plan: &experts.BudgetPlan{PinnedLayers: 3, CacheExperts: 5}}, 3},
		// --ram-gb of 2 MiB, all of it for Deltafin: the working set takes 0.8 MB and
		// the planner pins the head and the first layers that fit.
		{"planned from --ram-gb", StreamOptions{TotalRAM: 64 << 30, OverrideRAM: 2 << 20}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			trace := filepath.Join(t.TempDir(), "trace.jsonl")
			opts := tc.stream
			opts.TracePath = trace
			m, err := Open(t.Context(), dir, Options{Stream: &opts})
			require.NoError(t, err)
			if tc.pinned >= 0 {
				require.Equal(t, tc.pinned, m.pinned)
			} else {
				require.Less(t, m.pinned, m.cfg.Layers, "the plan streams some layers")
				require.Contains(t, m.Plan().String(), "expected from disk per token")
			}
			require.True(t, m.experts.fromDisk(), "MXFP4 experts go through the expert store")
			checkReference(t, m, ref, []string{"short", "text"}, 2e-3)
			st := m.experts.stats()
			require.LessOrEqual(t, st.CachedNow, max(m.plan.CacheExperts, 0))
			if tc.pinned == 10 {
				// Every layer pinned: the lookahead guesses every next
				// MoE layer of every decode step, and some guesses hit.
				require.Positive(t, st.SpecReads)
				require.Positive(t, st.SpecHits)
			}
			t.Logf("store: %+v", st)
			require.NoError(t, m.Close())

			b, err := os.ReadFile(trace)
			require.NoError(t, err)
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			require.NotEmpty(t, lines)
			var r traceRecord
			require.NoError(t, json.Unmarshal([]byte(lines[0]), &r))
			require.Equal(t, 1, r.Layer, "k3-tiny's first MoE layer")
			require.Len(t, r.Experts, m.cfg.TopK)
		})
	}
}

func TestTruncatedK3ShardNamesTheExpert(t *testing.T) {
	t.Parallel()
	src := filepath.Join("..", "testdata", "k3-tiny")
	dir := testref.CopyModel(t, "k3-tiny", t.TempDir())
	m, err := Open(t.Context(), src, Options{})
	require.NoError(t, err)
	sp := m.ck.span(m.cfg, 4, 9)
	require.NoError(t, m.Close())
	cut := sp.off + sp.n/3
	require.NoError(t, os.Truncate(filepath.Join(dir, sp.shard.name), cut))
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"in RAM", Options{}},
		{"streamed", Options{Stream: &StreamOptions{Plan: &experts.BudgetPlan{CacheExperts: 1}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(t.Context(), dir, tc.opts)
			require.ErrorIs(t, err, ckpt.ErrTruncated)
			require.ErrorContains(t, err, sp.shard.name)
			require.ErrorContains(t, err, "inside layer 4 expert 9")
		})
	}
}
