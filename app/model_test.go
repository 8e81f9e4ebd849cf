package app

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltafin/deltafin/downloader/hubtest"
	"github.com/deltafin/deltafin/engine"
	"github.com/deltafin/deltafin/internal/sysinfo"
	"github.com/stretchr/testify/require"
)

// TestOpenModelStreamsK3Tiny opens the tiny K3 through OpenModel with a
// --ram-gb budget that pins few layers, generates, and checks the trace and
// the persisted heat histogram.
func TestOpenModelStreamsK3Tiny(t *testing.T) {
	data := t.TempDir()
	trace := filepath.Join(t.TempDir(), "trace.jsonl")
	cfg := Config{DataDir: data, RAMGB: (2 << 20) / 1e9, Trace: trace}
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
// expert store asks the mirror's Source (an ckpt.Ensurer) for each missing expert, then
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
	prompt := everyBigramAfter(7, 1024)
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
		_, err = s.Generate(t.Context(), prompt, engine.GenerateOptions{MaxNew: 8}, func(tok int) error {
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

// TestOpenModelRefusesRAMAboveThePhysical: --ram-gb above this machine's
// memory is refused before the model directory is even looked at (this
// one has no model: the RAM error comes first).
func TestOpenModelRefusesRAMAboveThePhysical(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig(func(string) string { return "" })
	cfg.DataDir = t.TempDir()
	cfg.RAMGB = 1e6
	_, err := OpenModel(t.Context(), cfg, ModelRef{Dir: t.TempDir()})
	require.ErrorIs(t, err, ErrRAM)
	require.ErrorContains(t, err, "--ram-gb 1e+06")
}

func TestCheckRAMWarnsAboveTheAvailable(t *testing.T) {
	t.Parallel()
	mem := sysinfo.Memory{Total: 64e9, Available: 20e9}
	w, err := checkRAM(32, mem)
	require.NoError(t, err)
	require.Contains(t, w, "more than the 20.0 GB available now")
	w, err = checkRAM(16, mem)
	require.NoError(t, err)
	require.Empty(t, w)
	_, err = checkRAM(65, mem)
	require.ErrorIs(t, err, ErrRAM)
}

// TestOpenModelRefusesADamagedTokenizer: a tokenizer file that does not
// parse is refused before the weights are read, even when the caller does
// not need a tokenizer (a missing one it would accept). The shards are
// left out: reaching them would fail differently.
func TestOpenModelRefusesADamagedTokenizer(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig(func(string) string { return "" })
	cfg.DataDir = t.TempDir()
	dir := t.TempDir()
	src := filepath.Join("..", "testdata", "k3-tiny")
	for _, f := range []string{"config.json", "tokenizer_config.json"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), b, 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tiktoken.model"), []byte("not base64 at all\n"), 0o644))
	_, err := OpenModel(t.Context(), cfg, ModelRef{Dir: dir})
	require.ErrorContains(t, err, "tokenizer")
	require.NotErrorIs(t, err, engine.ErrCheckpoint)
}

// everyBigramAfter is the prompt c,0, c,1, …, c,vocab−1, c: whatever token
// a model answers it with, the pair (c, that token) stands earlier in the
// prompt, so the n-gram guesser guesses at the first decode step whatever
// the weights (a random-weight model seldom repeats itself otherwise).
func everyBigramAfter(c, vocab int) []int {
	p := make([]int, 0, 2*vocab+1)
	for v := range vocab {
		p = append(p, c, v)
	}
	return append(p, c)
}

// TestOpenModelLogsToItsLog: what opening a model says on its way (here:
// another holder of the mirror a --model folder was written by, and its
// unverified bytes used under --allow-unverified) goes to ModelRef.Log,
// the command's log with its log file, not to the process's default.
func TestOpenModelLogsToItsLog(t *testing.T) {
	t.Parallel()
	h := hubtest.New(t, filepath.Join("..", "testdata", "k3-tiny"))
	h.NoXet = true // nothing verifiable: the install stays unverified
	cfg := streamInstall(t, h)
	cfg.AllowUnverified = true
	holder, err := OpenMirror(t.Context(), cfg)
	require.NoError(t, err)
	defer holder.Close()

	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	m, err := OpenModel(t.Context(), cfg, ModelRef{Dir: cfg.ModelDir(), NeedTokenizer: true, Log: log})
	require.NoError(t, err)
	require.NoError(t, m.Close())
	require.Contains(t, buf.String(), "another process holds the mirror")
	require.Contains(t, buf.String(), "using bytes that could not be verified (--allow-unverified)")
}
