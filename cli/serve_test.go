package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/deltafin/deltafin/app"
	"github.com/deltafin/deltafin/downloader"
	"github.com/deltafin/deltafin/downloader/hubtest"
	"github.com/deltafin/deltafin/internal/testref"
	"github.com/deltafin/deltafin/tokenizer"
	"github.com/stretchr/testify/require"
)

func TestServeK3Tiny(t *testing.T) {
	t.Parallel()
	cfg := app.DefaultConfig(func(k string) string {
		return map[string]string{"DELTAFIN_HOME": t.TempDir(), "DELTAFIN_SERVER_MAX_TOKENS": "2"}[k]
	})
	cfg.Server.ModelDir = "../testdata/k3-tiny"
	cfg.Server.Port = 0
	cfg.Trace = filepath.Join(t.TempDir(), "trace.jsonl")
	require.NoError(t, cfg.Validate())
	require.NoError(t, cfg.Server.Validate())
	require.Equal(t, 2, cfg.Server.MaxTokens)

	ctx, cancel := context.WithCancel(t.Context())
	base, done := startServe(t, ctx, cfg)

	resp, err := http.Get(base + "/health")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(body), `"model":"k3-tiny"`, "--model DIR is served under the checkpoint's own name")

	// DELTAFIN_SERVER_MAX_TOKENS caps the completion.
	resp, err = http.Post(base+"/v1/completions", "application/json",
		strings.NewReader(`{"model":"k3-tiny","prompt":[1,2,3],"max_tokens":50}`))
	require.NoError(t, err)
	var c struct {
		Model string `json:"model"`
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&c))
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, 2, c.Usage.CompletionTokens)
	require.Equal(t, "k3-tiny", c.Model)

	cancel()
	require.NoError(t, <-done)

	// --trace recorded the router's choices for the served tokens.
	trace, err := os.ReadFile(cfg.Trace)
	require.NoError(t, err)
	require.Contains(t, string(trace), `"experts"`)
}

func TestServeRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		dir   string
		want  error
		check string
	}{
		{"no model installed", "", app.ErrNoModel, "deltafin setup"},
		{"not a model", t.TempDir(), app.ErrNoModel, "has no config.json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := app.DefaultConfig(func(string) string { return "" })
			cfg.DataDir = t.TempDir()
			cfg.Server.ModelDir = tc.dir
			cfg.Server.Port = 0
			require.NoError(t, cfg.Validate())
			err := serve(t.Context(), cfg, nil, slog.New(slog.DiscardHandler), nil)
			require.ErrorIs(t, err, tc.want)
			require.Contains(t, err.Error(), tc.check)
		})
	}
}

// TestServeStreamInstall: without --model, serve runs the installed
// model; in a stream install the experts come from the (fake) hub on
// demand, and the answer is k3-tiny's reference continuation.
func TestServeStreamInstall(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	h := hubtest.New(t, filepath.Join("..", "testdata", "k3-tiny"))
	cfg := hubConfig(t, h)
	require.NoError(t, setup(ctx, cfg, SetupOptions{Mode: downloader.Stream, Headroom: 1, ChunkSize: 64 << 10}, io.Discard))
	cfg.Server.Port = 0
	before := h.Requests.Load()

	ctx, cancel := context.WithCancel(ctx)
	base, done := startServe(t, ctx, cfg)
	prompt, want := testref.Ints(t, k3TinyRef, "short.input_ids"), testref.Ints(t, k3TinyRef, "short.greedy_tokens")
	body, err := json.Marshal(map[string]any{"model": "deltafin-kimi-k3", "prompt": prompt, "max_tokens": len(want), "temperature": 0})
	require.NoError(t, err)
	resp, err := http.Post(base+"/v1/completions", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	var c struct {
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&c))
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	tok, err := tokenizer.Load(filepath.Join("..", "testdata", "k3-tiny"))
	require.NoError(t, err)
	require.Equal(t, tok.Decode(want), c.Choices[0].Text)
	require.Greater(t, h.Requests.Load(), before, "experts came from the hub")
	cancel()
	require.NoError(t, <-done)
}

func TestServerConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		edit func(*app.ServerConfig)
		err  string
	}{
		{"defaults", nil, nil, ""},
		{"env max tokens", map[string]string{"DELTAFIN_SERVER_MAX_TOKENS": "64"}, nil, ""},
		{"env max tokens not a number", map[string]string{"DELTAFIN_SERVER_MAX_TOKENS": "lots"}, nil, "DELTAFIN_SERVER_MAX_TOKENS"},
		{"negative max tokens", nil, func(s *app.ServerConfig) { s.MaxTokens = -1 }, "max tokens"},
		{"port", nil, func(s *app.ServerConfig) { s.Port = 70000 }, "port"},
		{"queue", nil, func(s *app.ServerConfig) { s.Queue = -2 }, "queue"},
		{"memo", nil, func(s *app.ServerConfig) { s.MemoEntries = -1 }, "memo"},
		{"host", nil, func(s *app.ServerConfig) { s.Host = "" }, "host"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := app.DefaultConfig(func(k string) string { return tc.env[k] })
			cfg.DataDir = t.TempDir()
			if tc.edit != nil {
				tc.edit(&cfg.Server)
			}
			require.NoError(t, cfg.Validate(), "server settings never stop other commands")
			err := cfg.Server.Validate()
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.err)
		})
	}
	cfg := app.DefaultConfig(func(k string) string {
		return map[string]string{"DELTAFIN_SERVER_MAX_TOKENS": "64", "DELTAFIN_API_KEY": "k"}[k]
	})
	require.Equal(t, app.ServerConfig{Host: "127.0.0.1", Port: 8000, Queue: 32, MemoEntries: 32, MaxTokens: 64, APIKey: "k"}, cfg.Server)
}

// startServe runs Serve until ctx ends and returns its base URL and the
// channel its result arrives on.
func startServe(t *testing.T, ctx context.Context, cfg app.Config) (string, <-chan error) {
	t.Helper()
	urls := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, nil, slog.New(slog.DiscardHandler), func(u string) { urls <- u }) }()
	var base string
	select {
	case base = <-urls:
	case err := <-done:
		t.Fatalf("serve ended early: %v", err)
	}
	return base, done
}

// TestServeSettingsListTheFlags: serve's /settings lists the settings in
// force (address, data directory, model and the name it is served under,
// queue, kernels, RAM), says the API key is set, and never shows it.
func TestServeSettingsListTheFlags(t *testing.T) {
	t.Parallel()
	const key = "sekrit-key-4711"
	cfg := app.DefaultConfig(func(string) string { return "" })
	cfg.DataDir = t.TempDir()
	cfg.Server.ModelDir = "../testdata/k3-tiny"
	cfg.Server.Port, cfg.Server.Queue, cfg.Server.APIKey = 0, 5, key
	require.NoError(t, cfg.Validate())
	ctx, cancel := context.WithCancel(t.Context())
	base, done := startServe(t, ctx, cfg)
	modelDir, err := filepath.Abs(cfg.Server.ModelDir)
	require.NoError(t, err)

	// Sign in as a browser does: the page's token from the form, the key.
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	client := &http.Client{Jar: jar}
	page := func(resp *http.Response, err error) string {
		t.Helper()
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(b)
	}
	login := page(client.Get(base + "/settings"))
	m := regexp.MustCompile(`name="token" value="([0-9a-f]+)"`).FindStringSubmatch(login)
	require.NotNil(t, m, login)
	settings := page(client.PostForm(base+"/login", url.Values{"token": {m[1]}, "key": {key}, "next": {"/settings"}}))
	require.Contains(t, settings, `id="flags"`, settings)
	text := html.UnescapeString(regexp.MustCompile(`\s+`).ReplaceAllString(regexp.MustCompile(`<[^>]+>`).ReplaceAllString(settings, " "), " "))
	for _, want := range []string{
		"--host, --port " + strings.TrimPrefix(base, "http://") + " (--port 0)",
		"--data-dir " + cfg.DataDir,
		"--model " + modelDir + " (served as k3-tiny)",
		"--api-key set",
		"--queue 5",
		"--ram-gb what is available at start",
		"kernels (DELTAFIN_KERNELS) ",
	} {
		require.Contains(t, text, want)
	}
	require.NotContains(t, settings, key, "the key itself is never shown")
	cancel()
	require.NoError(t, <-done)
}

// TestServeErrorsCarryNoPackagePrefix: what serve refuses reaches the
// user as "deltafin: <why>", never with a Go package prefix ("app:").
func TestServeErrorsCarryNoPackagePrefix(t *testing.T) {
	t.Parallel()
	commands := []Command{{Name: "serve", Summary: "serve", Run: Serve(nil)}}
	for name, tc := range map[string]struct {
		args []string
		env  map[string]string
		want string
	}{
		"negative queue": {[]string{"serve", "--queue", "-1"}, nil, "negative queue length -1"},
		"bad port env":   {[]string{"serve"}, map[string]string{"DELTAFIN_PORT": "x"}, `DELTAFIN_PORT="x" is not a port number`},
		"bad spine":      {[]string{"serve", "--spine", "fp4"}, nil, `--spine "fp4": want bf16 or int8`},
		"no model":       {[]string{"serve", "--port", "0", "--model", t.TempDir()}, nil, "has no config.json"},
	} {
		t.Run(name, func(t *testing.T) {
			env := map[string]string{"DELTAFIN_HOME": t.TempDir()}
			for k, v := range tc.env {
				env[k] = v
			}
			var out, errOut bytes.Buffer
			code := Main(t.Context(), commands, tc.args, &out, &errOut, func(k string) string { return env[k] })
			require.Equal(t, 1, code, errOut.String())
			require.True(t, strings.HasPrefix(errOut.String(), "deltafin: "), errOut.String())
			require.Contains(t, errOut.String(), tc.want)
			require.NotRegexp(t, `\b(app|server|engine|downloader|store|web):`, errOut.String())
		})
	}
}
