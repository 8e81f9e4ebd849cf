package app

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	st, err := cfg.OpenStream(model, nil)
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
	_, err = os.Stat(filepath.Join(data, "heat", "k3-tiny.heat"))
	require.NoError(t, err, "the heat histogram persists in the data directory")
}
