package app

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/checkpoint/sourcetest"
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

// TestStreamedEngineFromStreamInstall: the same stream install read through
// the expert store (the product's streamed path: each expert's Ensure, then
// its chunked direct reads on the scheduler) gives the same tokens, its
// experts fetched on demand.
func TestStreamedEngineFromStreamInstall(t *testing.T) {
	ctx := t.Context()
	h := hubtest.New(t, filepath.Join("..", "testdata", "k3-tiny"))
	cfg := streamInstall(t, h)
	m, err := OpenMirror(ctx, cfg)
	require.NoError(t, err)
	defer m.Close()
	before := h.Requests.Load()
	model, err := engine.Open(ctx, m.Dir(), engine.Options{OpenSource: MirrorSource(m),
		Stream: &engine.StreamOptions{Plan: &engine.BudgetPlan{PinnedLayers: 1 << 20, CacheExperts: 4}}})
	require.NoError(t, err)
	defer model.Close()
	want := refInts(t, "short.greedy_tokens")
	var got []int
	_, err = model.NewSession().Generate(ctx, refInts(t, "short.input_ids"), engine.GenerateOptions{MaxNew: len(want)},
		func(tok int) error { got = append(got, tok); return nil })
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.Greater(t, h.Requests.Load(), before, "experts came from the hub")
	st := model.Stats()
	require.Positive(t, st.Misses)
	require.GreaterOrEqual(t, st.Drives[0].Reads, st.Misses, "read by the mirror's readers, a chunk read or more per expert read on demand")
}

// TestCheckedFileConformance runs the Source contract against a file of a
// mirror folder read without its mirror (checkedFile: presence checked),
// over a folder installed in full (downloader.AdoptComplete).
func TestCheckedFileConformance(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	want, err := os.ReadFile(filepath.Join("..", "testdata", "k3-tiny", "model-00002-of-000004.safetensors"))
	require.NoError(t, err)
	path := filepath.Join(dir, "model.safetensors")
	require.NoError(t, os.WriteFile(path, want, 0o644))
	require.NoError(t, downloader.AdoptComplete(downloader.Options{Dir: dir, HubOptions: downloader.HubOptions{Repo: "x/y", Revision: hubtest.Revision}}))
	require.True(t, downloader.IsMirrorFolder(dir))
	f, err := downloader.OpenFolder(dir)
	require.NoError(t, err)
	sourcetest.Run(t, func(t *testing.T) sourcetest.Fixture {
		src, err := ckpt.OpenFile(t.Context(), path)
		require.NoError(t, err)
		c := checkedFile{src, f, "model.safetensors"}
		t.Cleanup(func() { c.Close() })
		return sourcetest.Fixture{Src: c, Path: path, Want: want}
	})
}
