package engine

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/internal/directio"
)

// TestSetCacheBudgetShrinksTheCache: a model whose cache has filled gives
// experts and their buffers back when its budget shrinks, keeps generating
// the same tokens, and never grows past its plan.
func TestSetCacheBudgetShrinksTheCache(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "testdata", "k3-tiny")
	m, err := Open(t.Context(), dir, Options{Stream: &StreamOptions{TotalRAM: 64 << 30, OverrideRAM: 64 << 20, mode: directio.Buffered}})
	require.NoError(t, err)
	defer m.Close()
	p := m.Plan()
	require.Positive(t, p.CacheExperts)
	greedy := func() []int {
		var out []int
		_, err := m.NewSession().Generate(t.Context(), []int{5, 6, 7}, GenerateOptions{MaxNew: 6}, func(tok int) error {
			out = append(out, tok)
			return nil
		})
		require.NoError(t, err)
		return out
	}
	want := greedy()
	store := m.experts
	before := store.stats()
	require.Positive(t, before.CachedNow, "the cache filled")

	require.Equal(t, p.SlotBytes, m.SetCacheBudget(p.SlotBytes+p.SlotBytes/2), "whole experts")
	after := store.stats()
	require.LessOrEqual(t, after.CachedNow, 1)
	require.Less(t, after.BufferBytes, before.BufferBytes, "buffers handed back")
	require.Equal(t, want, greedy(), "a smaller cache changes where bytes come from, not the tokens")
	require.LessOrEqual(t, store.stats().CachedNow, 1)

	require.Equal(t, int64(p.CacheExperts)*p.SlotBytes, m.SetCacheBudget(1<<62), "never past the plan")
	require.Zero(t, m.SetCacheBudget(-1))
}

func TestTraceWritesOneLinePerLayer(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	tw, err := createTrace(path)
	require.NoError(t, err)
	require.NoError(t, tw.Record(0, 1, []int{5, 3}))
	require.NoError(t, tw.Record(0, 2, []int{7}))
	require.NoError(t, tw.Record(1, 1, []int{3, 9}))
	_, err = os.Stat(path)
	require.True(t, os.IsNotExist(err), "the trace appears only when complete")
	require.NoError(t, tw.Close())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	require.Len(t, lines, 3)
	var r traceRecord
	require.NoError(t, json.Unmarshal([]byte(lines[2]), &r))
	require.Equal(t, traceRecord{Token: 1, Layer: 1, Experts: []int{3, 9}}, r)
	require.Equal(t, `{"token":0,"layer":2,"experts":[7]}`, lines[1])
	require.ErrorContains(t, tw.Record(2, 1, []int{1}), "closed")
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file left behind")
}
