package app

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/downloader"
	"github.com/deltafin/deltafin/downloader/hubtest"
	"github.com/deltafin/deltafin/engine"
	"github.com/deltafin/deltafin/internal/testref"
)

const k3TinyRef = "../testdata/k3-tiny/reference.safetensors"

func refInts(t *testing.T, name string) []int { return testref.Ints(t, k3TinyRef, name) }

// streamInstall installs the fake hub's model in stream mode (metadata and
// the spine; no expert) into a fresh data directory, as deltafin setup
// --stream does.
func streamInstall(t *testing.T, h *hubtest.Hub) Config {
	cfg := hubConfig(t, h)
	m, p, err := OpenPlan(t.Context(), cfg, downloader.Options{ChunkSize: 64 << 10})
	require.NoError(t, err)
	require.NoError(t, m.Fetch(t.Context(), p, p.Work(downloader.Stream)))
	require.NoError(t, m.Close())
	return cfg
}

// TestEngineFromStreamInstall: a stream install holds no expert; the engine
// opened over the mirror fetches them on demand from the (fake) hub and
// produces k3-tiny's exact reference tokens.
func TestEngineFromStreamInstall(t *testing.T) {
	ctx := t.Context()
	h := hubtest.New(t, filepath.Join("..", "testdata", "k3-tiny"))
	cfg := streamInstall(t, h)

	m, err := OpenMirror(ctx, cfg)
	require.NoError(t, err)
	defer m.Close()
	p, err := m.Plan(ctx)
	require.NoError(t, err)
	cached, total, err := m.ExpertsCached(p)
	require.NoError(t, err)
	require.Zero(t, cached)
	before := h.Requests.Load()

	model, err := engine.Open(ctx, m.Dir(), engine.Options{OpenSource: MirrorSource(m)})
	require.NoError(t, err)
	defer model.Close()
	for _, tag := range []string{"short", "text"} {
		t.Run(tag, func(t *testing.T) {
			want := refInts(t, tag+".greedy_tokens")
			var got []int
			_, err := model.NewSession().Generate(ctx, refInts(t, tag+".input_ids"), engine.GenerateOptions{MaxNew: len(want)},
				func(tok int) error { got = append(got, tok); return nil })
			require.NoError(t, err)
			require.Equal(t, want, got)
		})
	}
	require.Greater(t, h.Requests.Load(), before, "experts came from the hub")
	cached, _, err = m.ExpertsCached(p)
	require.NoError(t, err)
	require.Positive(t, cached)
	t.Logf("experts fetched on demand: %d of %d", cached, total)
}
