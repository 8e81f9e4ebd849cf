package app

import (
	"encoding/binary"
	"io"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/downloader"
	"github.com/deltafin/deltafin/downloader/hubtest"
	"github.com/deltafin/deltafin/engine"
)

// refInts reads an I64 tensor of testdata/k3-tiny/reference.safetensors.
func refInts(t *testing.T, name string) []int {
	t.Helper()
	dtype, b := referenceBytes(t, name)
	require.Equal(t, "I64", dtype)
	out := make([]int, len(b)/8)
	for i := range out {
		out[i] = int(int64(binary.LittleEndian.Uint64(b[8*i:])))
	}
	return out
}

// TestEngineFromStreamInstall: a stream install holds no expert; the engine
// opened over the mirror fetches them on demand from the (fake) hub and
// produces k3-tiny's exact reference tokens.
func TestEngineFromStreamInstall(t *testing.T) {
	ctx := t.Context()
	h := hubtest.New(t, filepath.Join("..", "testdata", "k3-tiny"))
	cfg := hubConfig(t, h)
	require.NoError(t, Setup(ctx, cfg, SetupOptions{Mode: downloader.Stream, Headroom: 1, ChunkSize: 64 << 10}, io.Discard))

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
