package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/web"
)

// app-state.json is validated on load and on save: a negative queue (which
// left the app with no API: the server refused to start), a NUL or
// 100,000-character API key, and timers of 1e308 (which overflow a
// time.Duration) are refused naming the file and the setting.
func TestStateValuesValidated(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, json, want string }{
		{"negative queue", `{"queue":-1}`, "queue depth"},
		{"huge queue", `{"queue":1000000000}`, "queue depth"},
		{"NUL in the key", `{"api_key":"abc\u0000def"}`, "API key"},
		{"long key", `{"api_key":"` + strings.Repeat("k", 100000) + `"}`, "API key"},
		{"notify 1e308", `{"notify_after_seconds":1e308}`, "notification threshold"},
		{"warm idle 1e308", `{"warm_idle_minutes":1e308}`, "idle time"},
		{"negative timer", `{"warm_idle_minutes":-5}`, "idle time"},
		{"bad origin", `{"cors_origins":["javascript:alert(1)"]}`, "CORS origin"},
	} {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, stateFile), []byte(tc.json), 0o600))
		cfg := DefaultConfig(func(string) string { return "" })
		cfg.DataDir = dir
		err := RememberedSettings(&cfg, func(string) bool { return false })
		require.ErrorIs(t, err, ErrBadState, tc.name)
		require.Contains(t, err.Error(), tc.want, tc.name)
		require.Contains(t, err.Error(), stateFile, tc.name)
	}

	// A good file loads.
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, stateFile), []byte(`{"queue":4,"api_key":"sesame","notify_after_seconds":30,"warm_idle_minutes":10}`), 0o600))
	cfg := DefaultConfig(func(string) string { return "" })
	cfg.DataDir = dir
	require.NoError(t, RememberedSettings(&cfg, func(string) bool { return false }))
	require.Equal(t, 4, cfg.Server.Queue)
	require.Equal(t, 10*time.Minute, cfg.WarmIdleAfter)

	// Saving refuses the same values, from the page or anywhere else.
	good := web.Settings{Port: 8000, Queue: 4, APIKey: "sesame", NotifyAfterSeconds: 30, WarmIdleMinutes: 10}
	require.NoError(t, checkSettings(good))
	for _, bad := range []func(*web.Settings){
		func(s *web.Settings) { s.Queue = -1 },
		func(s *web.Settings) { s.APIKey = "a\x00b" },
		func(s *web.Settings) { s.APIKey = strings.Repeat("k", 100000) },
		func(s *web.Settings) { s.NotifyAfterSeconds = 1e308 },
		func(s *web.Settings) { s.WarmIdleMinutes = 1e308 },
	} {
		s := good
		bad(&s)
		require.Error(t, checkSettings(s), "%+v", s)
	}
	q := -1
	require.Error(t, saveState(t.TempDir(), savedState{keptSettings: keptSettings{Queue: &q}}))
}
