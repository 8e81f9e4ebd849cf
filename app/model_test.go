package app

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltafin/deltafin/downloader/hubtest"
	"github.com/deltafin/deltafin/engine"
	"github.com/stretchr/testify/require"
)

// TestOpenModelStreamsK3Tiny opens the tiny K3 through OpenModel with a
// --ram-gb budget that pins few layers, generates, and checks the trace and
// the persisted heat histogram.
func TestOpenModelStreamsK3Tiny(t *testing.T) {
	data := t.TempDir()
	trace := filepath.Join(t.TempDir(), "trace.jsonl")
	cfg := Config{DataDir: data, RAMGB: (10<<30 + 2<<20) / 1e9, Trace: trace}
	model := filepath.Join("..", "testdata", "k3-tiny")
	m, err := OpenModel(t.Context(), cfg, ModelRef{Dir: model})
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

	b, err := os.ReadFile(trace)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var r struct {
		Experts []int `json:"experts"` // one line of the router trace
	}
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &r))
	require.Len(t, r.Experts, m.Info().TopK)
	b, err = os.ReadFile(filepath.Join(data, "expert_heat.jsonl"))
	require.NoError(t, err, "the heat histogram persists in the data directory")
	require.Contains(t, string(b), `"heat":`)
}

// TestStreamInstallFetchesExpertsThroughTheStore: over a stream install the
// expert store asks the mirror's Source (an engine.Ensurer) for each missing expert, then
// reads it with direct I/O from the sparse shard; the tokens are exact.
func TestStreamInstallFetchesExpertsThroughTheStore(t *testing.T) {
	ctx := t.Context()
	h := hubtest.New(t, filepath.Join("..", "testdata", "k3-tiny"))
	cfg := streamInstall(t, h)
	mirror, err := OpenMirror(ctx, cfg)
	require.NoError(t, err)
	defer mirror.Close()
	stream := &engine.StreamOptions{Plan: &engine.BudgetPlan{PinnedLayers: 0, CacheExperts: 2}}
	before := h.Requests.Load()
	m, err := engine.Open(ctx, mirror.Dir(), engine.Options{OpenSource: MirrorSource(mirror), Stream: stream})
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

// TestOpenModelHonoursSpec: every entry point opens its model with
// OpenModel, so DELTAFIN_SPEC=0 turns speculation off for all of them (the
// menu bar's server used to ignore it); the tokens are the same either way.
func TestOpenModelHonoursSpec(t *testing.T) {
	t.Parallel()
	prompt := make([]int, 12)
	for i := range prompt {
		prompt[i] = 7 // a repetitive prompt: the n-gram guesser has guesses
	}
	gen := func(spec string) ([]int, engine.SpecStats) {
		cfg := DefaultConfig(func(k string) string { return map[string]string{"DELTAFIN_SPEC": spec}[k] })
		cfg.DataDir = t.TempDir()
		require.NoError(t, cfg.Validate())
		m, err := OpenModel(t.Context(), cfg, ModelRef{Dir: filepath.Join("..", "testdata", "k3-tiny"), NeedTokenizer: true})
		require.NoError(t, err)
		defer func() { require.NoError(t, m.Close()) }()
		require.NotNil(t, m.Tokenizer)
		s := m.NewSession()
		var got []int
		_, err = s.Generate(t.Context(), prompt, engine.GenerateOptions{MaxNew: 120}, func(tok int) error {
			got = append(got, tok)
			return nil
		})
		require.NoError(t, err)
		return got, s.SpecStats()
	}
	on, onStats := gen("")
	off, offStats := gen("0")
	require.Equal(t, on, off)
	require.Positive(t, onStats.Passes)
	require.Zero(t, offStats.Passes)
}

// TestOpenModelChecksBeforeLoading: a directory without a model or without
// the tokenizer the caller needs is refused by name before any weight is
// read.
func TestOpenModelChecksBeforeLoading(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig(func(string) string { return "" })
	cfg.DataDir = t.TempDir()
	_, err := OpenModel(t.Context(), cfg, ModelRef{Dir: t.TempDir()})
	require.ErrorIs(t, err, ErrNoModel)
	require.ErrorContains(t, err, "config.json")

	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "k3-tiny", "config.json"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644))
	_, err = OpenModel(t.Context(), cfg, ModelRef{Dir: dir, NeedTokenizer: true})
	require.ErrorContains(t, err, "tokenizer")
}
