package web_test

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/app"
)

// startApp runs the menu-bar app's core (no tray) on dataDir: its server
// serves the demo model with the page, whose /model and /settings then
// drive the App itself. It returns the App and its base URL.
func startApp(t *testing.T, dataDir string) (a *app.App, base string, stop func()) {
	t.Helper()
	return startAppEnv(t, dataDir, nil, nil)
}

// startAppEnv is startApp with the environment env (HF_ENDPOINT: a fake
// hub) and configure's changes to the configuration.
func startAppEnv(t *testing.T, dataDir string, env map[string]string, configure func(*app.Config)) (a *app.App, base string, stop func()) {
	t.Helper()
	cfg := app.DefaultConfig(func(k string) string { return env[k] })
	cfg.DataDir = dataDir
	if configure != nil {
		configure(&cfg)
	}
	cfg.Server.Port = 0
	require.NoError(t, cfg.Validate())
	require.NoError(t, app.RememberedAddress(&cfg))
	require.NoError(t, app.RememberedSettings(&cfg, func(string) bool { return false }))
	log := slog.New(slog.DiscardHandler)
	deps, err := app.MenuBarDeps(cfg, os.DirFS(tinyDir), log)
	require.NoError(t, err)
	// Only the model's parts: no notifications, idle or power sources,
	// login item or desktop in a test.
	deps.Notifier, deps.Idle, deps.Power, deps.Login, deps.Desktop, deps.KeepAwake = nil, nil, nil, nil, nil, nil
	a = app.New(cfg, deps, log)
	require.NoError(t, a.Start(t.Context()))
	var once sync.Once
	stop = func() { once.Do(func() { require.NoError(t, a.Close(context.Background())) }) }
	t.Cleanup(stop)
	for a.State().ServerAddr == "" {
		require.Empty(t, a.State().Problem)
		<-a.Changed()
	}
	return a, a.State().ServerAddr, stop
}
