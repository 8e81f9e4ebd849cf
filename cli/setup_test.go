package cli

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/app"
	"github.com/deltafin/deltafin/downloader"
	"github.com/deltafin/deltafin/downloader/hubtest"
)

func hubConfig(t *testing.T, h *hubtest.Hub) app.Config {
	cfg := app.DefaultConfig(func(k string) string {
		return map[string]string{"HF_ENDPOINT": h.URL() + "/", "HF_TOKEN": h.Token}[k]
	})
	cfg.DataDir = t.TempDir()
	require.NoError(t, cfg.Validate())
	return cfg
}

func TestSetupStreamThenFetchExpertsAndWarm(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	h := hubtest.New(t, filepath.Join("..", "testdata", "k3-tiny"))
	cfg := hubConfig(t, h)
	const chunk = 128 << 10

	var out bytes.Buffer
	require.NoError(t, setup(ctx, cfg, SetupOptions{Mode: downloader.Auto, DryRun: true, Headroom: 1}, &out))
	require.Regexp(t, `stream\s+\d.*\n`, out.String())
	require.Regexp(t, `full\s+\d`, out.String())
	require.Contains(t, out.String(), "--auto would install: full")
	require.Equal(t, int64(0), h.Requests.Load()-4*2, "a dry run reads only the four shard headers (two range requests each)")

	out.Reset()
	require.NoError(t, setup(ctx, cfg, SetupOptions{Mode: downloader.Stream, Headroom: 1, ChunkSize: chunk}, &out))
	require.Contains(t, out.String(), "stream install of moonshotai/Kimi-K3")
	require.Contains(t, out.String(), "experts cached: 0.0% (0 of 288)")

	// Warm from a router trace: read-only first, then fetch the top 2.
	trace := filepath.Join(t.TempDir(), "trace.jsonl")
	require.NoError(t, os.WriteFile(trace, []byte(`{"token":0,"layer":1,"experts":[4,5]}
{"token":1,"layer":1,"experts":[5]}
{"token":1,"layer":2,"experts":[9]}
`), 0o644))
	out.Reset()
	before := h.Requests.Load()
	require.NoError(t, warm(ctx, cfg, WarmOptions{Traces: []string{trace}}, &out))
	require.Equal(t, before, h.Requests.Load(), "warm without --fetch is read-only")
	require.Contains(t, out.String(), "routes=4 unique=3 missing=3")
	require.Contains(t, out.String(), "  L1-E5: 2\n  L1-E4: 1\n  L2-E9: 1\n")
	out.Reset()
	require.NoError(t, warm(ctx, cfg, WarmOptions{Traces: []string{trace}, Fetch: 2, ChunkSize: chunk}, &out))
	require.Contains(t, out.String(), "warmed 2 experts")
	require.Contains(t, out.String(), "experts cached: 0.7% (2 of 288)")

	out.Reset()
	require.NoError(t, fetchExperts(ctx, cfg, FetchOptions{Layers: "1-2", Headroom: 1, ChunkSize: chunk}, &out))
	require.Contains(t, out.String(), "experts cached: 22.2% (64 of 288)")
	out.Reset()
	require.NoError(t, fetchExperts(ctx, cfg, FetchOptions{Headroom: 1, ChunkSize: chunk}, &out))
	h.RequireIdentical(t, cfg.ModelDir())
	require.Error(t, fetchExperts(ctx, cfg, FetchOptions{Layers: "40-41", Headroom: 1}, &out), "no such layer")
}

func TestSetupInterruptedSaysHowToContinue(t *testing.T) {
	t.Parallel()
	h := hubtest.New(t, filepath.Join("..", "testdata", "k3-tiny"))
	cfg := hubConfig(t, h)
	// The first range request cancels the setup and waits for it to go.
	ctx, cancel := context.WithCancel(t.Context())
	h.SetFault(func(w http.ResponseWriter, r *http.Request, f *hubtest.File, start, end int64) bool {
		cancel()
		<-r.Context().Done()
		return true
	})
	err := setup(ctx, cfg, SetupOptions{Mode: downloader.Stream, Headroom: 1}, &bytes.Buffer{})
	require.ErrorIs(t, err, context.Canceled)
	require.Contains(t, err.Error(), "run deltafin setup again to continue")
}

func TestSetupResolvesABranchToItsCommit(t *testing.T) {
	t.Parallel()
	h := hubtest.New(t, filepath.Join("..", "testdata", "k3-tiny"))
	cfg := hubConfig(t, h)
	cfg.Revision = "main"
	var out bytes.Buffer
	require.NoError(t, setup(t.Context(), cfg, SetupOptions{Mode: downloader.Full, Headroom: 1}, &out))
	cfg.Revision = hubtest.Revision
	require.Contains(t, out.String(), cfg.ModelDir())
	h.RequireIdentical(t, cfg.ModelDir())
}

func TestSetupRefusesWithTheShortfall(t *testing.T) {
	t.Parallel()
	h := hubtest.New(t, filepath.Join("..", "testdata", "k3-tiny"))
	cfg := hubConfig(t, h)
	err := setup(t.Context(), cfg, SetupOptions{Mode: downloader.Auto, Headroom: 1 << 60}, &bytes.Buffer{})
	require.ErrorIs(t, err, downloader.ErrNoSpace)
	require.Contains(t, err.Error(), "more for stream mode")
}

func TestSetupExplainsMissingToken(t *testing.T) {
	t.Parallel()
	h := hubtest.New(t, filepath.Join("..", "testdata", "k3-tiny"))
	h.Token = "hf_secret"
	cfg := hubConfig(t, h)
	cfg.HFToken = ""
	err := setup(t.Context(), cfg, SetupOptions{Mode: downloader.Stream}, &bytes.Buffer{})
	require.ErrorIs(t, err, downloader.ErrAuth)
	require.Contains(t, err.Error(), "this repository needs HF_TOKEN")
}

// TestSetupRepair: a byte of a verified full install changed on disk is
// not seen by a plain setup (the file is marked verified) and is found and
// fetched again by setup --repair, which keeps the full mode.
func TestSetupRepair(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	h := hubtest.New(t, filepath.Join("..", "testdata", "k3-tiny"))
	cfg := hubConfig(t, h)
	var out bytes.Buffer
	require.NoError(t, setup(ctx, cfg, SetupOptions{Mode: downloader.Full, Headroom: 1}, &out))
	shard := filepath.Join(cfg.ModelDir(), "model-00003-of-000004.safetensors")
	f, err := os.OpenFile(shard, os.O_RDWR, 0)
	require.NoError(t, err)
	b := []byte{0}
	_, err = f.ReadAt(b, 500_000)
	require.NoError(t, err)
	b[0] ^= 1
	_, err = f.WriteAt(b, 500_000)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	// The write moved the mtime, unless the clock has not ticked since the
	// verification; move it as a later write would, without waiting.
	later := time.Now().Add(time.Hour)
	require.NoError(t, os.Chtimes(shard, later, later))

	require.NoError(t, setup(ctx, cfg, SetupOptions{Mode: downloader.Auto, Headroom: 1}, &out))
	got, err := os.ReadFile(shard)
	require.NoError(t, err)
	require.Equal(t, h.Files["model-00003-of-000004.safetensors"].Data, got, "a plain setup finds the file changed since it was verified and heals it")

	out.Reset()
	require.NoError(t, setup(ctx, cfg, SetupOptions{Mode: downloader.Auto, Repair: true, Headroom: 1}, &out))
	require.Contains(t, out.String(), "full install of")
	h.RequireIdentical(t, cfg.ModelDir())
}
