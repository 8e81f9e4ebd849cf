package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/app"
	"github.com/deltafin/deltafin/engine"
	"github.com/deltafin/deltafin/engine/tokenizer"
)

// TestAppWithoutDesktopFailsFast: `deltafin` with no arguments on a
// machine without a session bus says why at once instead of waiting for a
// tray that never comes.
func TestAppWithoutDesktopFailsFast(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"no bus at all", map[string]string{}, "DBUS_SESSION_BUS_ADDRESS is unset"},
		{"dead bus", map[string]string{"DBUS_SESSION_BUS_ADDRESS": "unix:path=" + filepath.Join(t.TempDir(), "gone")}, "session bus unix:path="},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.env["DELTAFIN_HOME"] = t.TempDir()
			code, _, errOut := runArgs(t, tc.env)
			require.Equal(t, 1, code)
			require.Contains(t, errOut, "app: no menu bar")
			require.Contains(t, errOut, tc.want)
		})
	}
}

// TestDemoModelEmbedded: the embedded demo unpacks into a directory the
// engine and the tokenizer open.
func TestDemoModelEmbedded(t *testing.T) {
	demo, err := demoModel()
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "demo")
	require.NoError(t, app.InstallDemo(demo, dir))
	m, err := engine.Open(t.Context(), dir, engine.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, m.Close()) })
	require.Equal(t, "deltafin-kimi-k3", m.Info().ID)
	_, err = tokenizer.Load(dir)
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(dir, "reference.safetensors"))
	require.ErrorIs(t, err, fs.ErrNotExist, "test oracles stay out of the binary")
}
