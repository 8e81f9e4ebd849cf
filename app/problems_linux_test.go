package app

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestShortError(t *testing.T) {
	t.Parallel()
	long := "downloader: GET https://huggingface.co/moonshotai/Kimi-K3/resolve/c5d1dd4c428bd1ce8b88c5044f3b6ccde9e3b721/model-00001-of-000064.safetensors: 503 Service Unavailable"
	for _, tc := range []struct{ in, want string }{
		{"app: short", "short"},
		{"app: open model: engine: RAM budget too small: x", "open model: RAM budget too small: x"},
		{"the job store: full", "the job store: full"},
		{"xdg-open: no method available for opening '/data'\nline 2\nline 3", "xdg-open: no method available for opening '/data' …"},
		{long, "GET https://huggingface.co/moonshotai/Kimi-K3/resolve/c5d1dd4c428bd1ce8b88c5044f3b6ccde9e3b721/model-…"},
	} {
		got := shortError(errors.New(tc.in))
		require.LessOrEqual(t, len([]rune(got)), maxProblemLen+2, got)
		require.NotContains(t, got, "\n")
		if tc.in == long {
			require.True(t, strings.HasSuffix(got, "…"), got)
			require.True(t, strings.HasPrefix(long, "downloader: "+strings.TrimSuffix(got, "…")), got)
			require.False(t, strings.HasPrefix(got, "downloader:"), "no package prefix shown")
			continue
		}
		require.Equal(t, tc.want, got)
	}
}

// TestProblemClearsWhenTheActionWorks: "Server failed to start" leaves the
// status line once Start server has worked, and one subsystem's success
// does not clear another's problem.
func TestProblemClearsWhenTheActionWorks(t *testing.T) {
	desk.reset()
	cfg := testConfig(t)
	demo := t.TempDir()
	for _, name := range []string{"config.json", "generation_config.json", "model.safetensors.index.json", "tokenizer_config.json",
		"model-00001-of-000004.safetensors", "model-00002-of-000004.safetensors", "model-00003-of-000004.safetensors", "model-00004-of-000004.safetensors"} {
		copyFile(t, filepath.Join("..", "testdata", "k3-tiny", name), filepath.Join(demo, name))
	}
	mi := newMirrorInstall(cfg)
	a := startApp(t, cfg, Deps{Downloader: mi, Notifier: NewNotifier(),
		Server: &apiServer{cfg: cfg, mi: mi, demo: os.DirFS(demo), log: slog.Default()}})
	st := waitFor(t, a, "server problem", func(s State) bool { return s.Problem != "" })
	require.True(t, strings.HasPrefix(st.Problem, "Server failed to start: "), st.Problem)
	require.LessOrEqual(t, len([]rune(st.Problem)), len("Server failed to start: ")+maxProblemLen+2)
	require.Equal(t, LabelStartServer, a.Menu().Item(ItemServer).Label, "no Stop server while none runs")
	desk.waitNotification(t, "Server failed to start")

	a.problem(subLogin, "Launch at login", errors.New("read-only autostart folder"))
	copyFile(t, filepath.Join("..", "testdata", "k3-tiny", "tiktoken.model"), filepath.Join(demo, "tiktoken.model"))
	a.Click(ItemServer)
	st = waitFor(t, a, "serving", func(s State) bool { return s.ServerAddr != "" })
	require.Equal(t, "Launch at login: read-only autostart folder", st.Problem, "the login problem stays")
	a.solved(subLogin)
	require.Empty(t, a.State().Problem)
	require.Equal(t, LabelStopServer, a.Menu().Item(ItemServer).Label)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(to, b, 0o644))
}
