package app

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/downloader"
	"github.com/deltafin/deltafin/downloader/hubtest"
)

func hubConfig(t *testing.T, h *hubtest.Hub) Config {
	cfg := DefaultConfig(func(k string) string {
		return map[string]string{"HF_ENDPOINT": h.URL() + "/", "HF_TOKEN": h.Token}[k]
	})
	cfg.DataDir = t.TempDir()
	require.NoError(t, cfg.Validate())
	return cfg
}

func TestSetupStreamThenFetchExpertsAndWarm(t *testing.T) {
	ctx := t.Context()
	h := hubtest.New(t, filepath.Join("..", "testdata", "k3-tiny"))
	cfg := hubConfig(t, h)
	const chunk = 128 << 10

	var out bytes.Buffer
	require.NoError(t, Setup(ctx, cfg, SetupOptions{Mode: downloader.Auto, DryRun: true, Headroom: 1}, &out))
	require.Regexp(t, `stream\s+\d.*\n`, out.String())
	require.Regexp(t, `full\s+\d`, out.String())
	require.Contains(t, out.String(), "--auto would install: full")
	require.Equal(t, int64(0), h.Requests.Load()-4*2, "a dry run reads only the four shard headers (two range requests each)")

	out.Reset()
	require.NoError(t, Setup(ctx, cfg, SetupOptions{Mode: downloader.Stream, Headroom: 1, ChunkSize: chunk}, &out))
	require.Contains(t, out.String(), "stream install of moonshotai/Kimi-K3")
	require.Contains(t, out.String(), "experts cached: 0.0% (0 of 288)")
	out.Reset()
	served := h.Served.Load()
	require.NoError(t, InstallSummary(ctx, cfg, &out))
	require.Equal(t, served, h.Served.Load(), "the summary reads the local mirror only")
	require.Regexp(t, `experts cached: 0.0% \(0 of 288\).*downloads \d`, out.String())

	// Warm from a router trace: read-only first, then fetch the top 2.
	trace := filepath.Join(t.TempDir(), "trace.jsonl")
	require.NoError(t, os.WriteFile(trace, []byte(`{"token":0,"layer":1,"experts":[4,5]}
{"token":1,"layer":1,"experts":[5]}
{"token":1,"layer":2,"experts":[9]}
`), 0o644))
	out.Reset()
	before := h.Requests.Load()
	require.NoError(t, Warm(ctx, cfg, WarmOptions{Traces: []string{trace}}, &out))
	require.Equal(t, before, h.Requests.Load(), "warm without --fetch is read-only")
	require.Contains(t, out.String(), "routes=4 unique=3 missing=3")
	require.Contains(t, out.String(), "  L1-E5: 2\n  L1-E4: 1\n  L2-E9: 1\n")
	out.Reset()
	require.NoError(t, Warm(ctx, cfg, WarmOptions{Traces: []string{trace}, Fetch: 2, ChunkSize: chunk}, &out))
	require.Contains(t, out.String(), "warmed 2 experts")
	require.Contains(t, out.String(), "experts cached: 0.7% (2 of 288)")

	out.Reset()
	require.NoError(t, FetchExperts(ctx, cfg, FetchOptions{Layers: "1-2", Headroom: 1, ChunkSize: chunk}, &out))
	require.Contains(t, out.String(), "experts cached: 22.2% (64 of 288)")
	out.Reset()
	require.NoError(t, FetchExperts(ctx, cfg, FetchOptions{Headroom: 1, ChunkSize: chunk}, &out))
	h.RequireIdentical(t, cfg.ModelDir())
	require.Error(t, FetchExperts(ctx, cfg, FetchOptions{Layers: "40-41", Headroom: 1}, &out), "no such layer")
}

func TestSetupInterruptedSaysHowToContinue(t *testing.T) {
	h := hubtest.New(t, filepath.Join("..", "testdata", "k3-tiny"))
	cfg := hubConfig(t, h)
	h.SetFault(func(w http.ResponseWriter, r *http.Request, f *hubtest.File, start, end int64) bool {
		<-r.Context().Done()
		return true
	})
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		for h.Requests.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	err := Setup(ctx, cfg, SetupOptions{Mode: downloader.Stream, Headroom: 1}, &bytes.Buffer{})
	require.ErrorIs(t, err, context.Canceled)
	require.Contains(t, err.Error(), "run deltafin setup again to continue")
}

func TestSetupResolvesABranchToItsCommit(t *testing.T) {
	h := hubtest.New(t, filepath.Join("..", "testdata", "k3-tiny"))
	cfg := hubConfig(t, h)
	cfg.Revision = "main"
	var out bytes.Buffer
	require.NoError(t, Setup(t.Context(), cfg, SetupOptions{Mode: downloader.Full, Headroom: 1}, &out))
	cfg.Revision = hubtest.Revision
	require.Contains(t, out.String(), cfg.ModelDir())
	h.RequireIdentical(t, cfg.ModelDir())
}

func TestSetupRefusesWithTheShortfall(t *testing.T) {
	h := hubtest.New(t, filepath.Join("..", "testdata", "k3-tiny"))
	cfg := hubConfig(t, h)
	err := Setup(t.Context(), cfg, SetupOptions{Mode: downloader.Auto, Headroom: 1 << 60}, &bytes.Buffer{})
	require.ErrorIs(t, err, downloader.ErrNoSpace)
	require.Contains(t, err.Error(), "more for stream mode")
}

func TestSetupExplainsMissingToken(t *testing.T) {
	h := hubtest.New(t, filepath.Join("..", "testdata", "k3-tiny"))
	h.Token = "hf_secret"
	cfg := hubConfig(t, h)
	cfg.HFToken = ""
	err := Setup(t.Context(), cfg, SetupOptions{Mode: downloader.Stream}, &bytes.Buffer{})
	require.ErrorIs(t, err, downloader.ErrAuth)
	require.Contains(t, err.Error(), "this repository needs HF_TOKEN")
}

func TestHubConfigFromEnvironment(t *testing.T) {
	home := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".cache", "huggingface"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".cache", "huggingface", "token"), []byte("hf_file\n"), 0o600))
	hfHome := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(hfHome, "token"), []byte("hf_hfhome"), 0o600))
	for _, tc := range []struct {
		name            string
		env             map[string]string
		endpoint, token string
	}{
		{"defaults", map[string]string{}, DefaultHFEndpoint, ""},
		{"HF_TOKEN wins", map[string]string{"HF_TOKEN": "hf_env", "HUGGING_FACE_HUB_TOKEN": "hf_old", "HOME": home}, DefaultHFEndpoint, "hf_env"},
		{"legacy variable", map[string]string{"HUGGING_FACE_HUB_TOKEN": "hf_old"}, DefaultHFEndpoint, "hf_old"},
		{"token file in ~/.cache", map[string]string{"HOME": home}, DefaultHFEndpoint, "hf_file"},
		{"token file in HF_HOME", map[string]string{"HOME": home, "HF_HOME": hfHome}, DefaultHFEndpoint, "hf_hfhome"},
		{"HF_ENDPOINT mirror", map[string]string{"HF_ENDPOINT": "https://hf-mirror.example/"}, "https://hf-mirror.example", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig(func(k string) string { return tc.env[k] })
			require.Equal(t, tc.endpoint, c.HFEndpoint)
			require.Equal(t, tc.token, c.HFToken)
			require.Equal(t, DefaultRepo, c.Repo)
			require.Equal(t, DefaultRevision, c.Revision)
		})
	}
}

func TestHubConfigValidation(t *testing.T) {
	base := DefaultConfig(func(string) string { return "" })
	for _, tc := range []struct {
		name string
		edit func(c *Config)
	}{
		{"repo without owner", func(c *Config) { c.Repo = "Kimi-K3" }},
		{"repo escaping", func(c *Config) { c.Repo = "../x/y" }},
		{"revision with slash", func(c *Config) { c.Revision = "a/../../b" }},
		{"zero jobs", func(c *Config) { c.Jobs = 0 }},
		{"endpoint not http", func(c *Config) { c.HFEndpoint = "ftp://x" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			tc.edit(&c)
			require.Error(t, c.validateHub())
		})
	}
}
