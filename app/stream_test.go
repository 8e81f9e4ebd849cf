package app

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltafin/deltafin/downloader"
	"github.com/deltafin/deltafin/downloader/hubtest"
	"github.com/deltafin/deltafin/engine"
	"github.com/stretchr/testify/require"
)

// TestOpenStreamRunsK3Tiny opens the tiny K3 through the app's streaming
// setup with a --ram-gb budget that pins few layers, generates, and checks
// the trace and the persisted heat histogram.
func TestOpenStreamRunsK3Tiny(t *testing.T) {
	data := t.TempDir()
	trace := filepath.Join(t.TempDir(), "trace.jsonl")
	cfg := Config{DataDir: data, RAMGB: (10<<30 + 2<<20) / 1e9, Trace: trace}
	model := filepath.Join("..", "testdata", "k3-tiny")
	st, err := cfg.OpenStream(nil)
	require.NoError(t, err)
	m, err := engine.Open(t.Context(), model, engine.Options{Stream: st.Options})
	require.NoError(t, err)
	require.Less(t, m.Plan().PinnedLayers, m.Info().Layers)
	require.Contains(t, m.Plan().String(), "expert cache")
	var got []int
	_, err = m.NewSession().Generate(t.Context(), []int{5, 6, 7}, engine.GenerateOptions{MaxNew: 3}, func(tok int) error {
		got = append(got, tok)
		return nil
	})
	require.NoError(t, err)
	require.Len(t, got, 3)
	require.NoError(t, m.Close())
	require.NoError(t, st.Close())

	b, err := os.ReadFile(trace)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var r engine.TraceRecord
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &r))
	require.Len(t, r.Experts, m.Info().TopK)
	b, err = os.ReadFile(filepath.Join(data, "expert_heat.jsonl"))
	require.NoError(t, err, "the heat histogram persists in the data directory")
	require.Contains(t, string(b), `"heat":`)
}

// TestStreamInstallFetchesExpertsThroughTheStore: over a stream install the
// expert store asks the mirror (its Fetcher) for each missing expert, then
// reads it with direct I/O from the sparse shard; the tokens are exact.
func TestStreamInstallFetchesExpertsThroughTheStore(t *testing.T) {
	ctx := t.Context()
	h := hubtest.New(t, filepath.Join("..", "testdata", "k3-tiny"))
	cfg := hubConfig(t, h)
	require.NoError(t, Setup(ctx, cfg, SetupOptions{Mode: downloader.Stream, Headroom: 1, ChunkSize: 64 << 10}, io.Discard))
	mirror, err := OpenMirror(ctx, cfg)
	require.NoError(t, err)
	defer mirror.Close()
	st, err := cfg.OpenStream(mirror)
	require.NoError(t, err)
	defer st.Close()
	st.Options.Plan = &engine.BudgetPlan{PinnedLayers: 0, CacheExperts: 2}
	before := h.Requests.Load()
	m, err := engine.Open(ctx, mirror.Dir(), engine.Options{OpenSource: MirrorSource(mirror), Stream: st.Options})
	require.NoError(t, err)
	defer m.Close()
	want := refInts(t, "text.greedy_tokens")
	var got []int
	_, err = m.NewSession().Generate(ctx, refInts(t, "text.input_ids"), engine.GenerateOptions{MaxNew: len(want)},
		func(tok int) error { got = append(got, tok); return nil })
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.Greater(t, h.Requests.Load(), before, "experts came from the hub")
}
