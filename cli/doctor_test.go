package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/deltafin/deltafin/app"
	"github.com/stretchr/testify/require"
)

func TestDoctorText(t *testing.T) {
	t.Parallel()
	cfg := app.Config{DataDir: filepath.Join(t.TempDir(), "not", "yet")}
	var out bytes.Buffer
	require.NoError(t, doctor(t.Context(), cfg, &out, false))
	s := out.String()
	require.Contains(t, s, runtime.GOOS+"/"+runtime.GOARCH)
	require.Contains(t, s, "not created yet")
	require.Contains(t, s, "ref")
	require.NotContains(t, s, "problem")
}

func TestDoctorJSON(t *testing.T) {
	t.Parallel()
	cfg := app.Config{DataDir: t.TempDir()}
	var out bytes.Buffer
	require.NoError(t, doctor(t.Context(), cfg, &out, true))
	var r Report
	require.NoError(t, json.Unmarshal(out.Bytes(), &r))
	require.Equal(t, "exists", r.DataDirNote)
	require.Positive(t, r.RAMTotal)
	require.Positive(t, r.DiskFree)
}

func TestDefaultConfig(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DELTAFIN_HOME": "/srv/df"}
	c := app.DefaultConfig(func(k string) string { return env[k] })
	require.Equal(t, "/srv/df", c.DataDir)
	c = app.DefaultConfig(func(string) string { return "" })
	require.Equal(t, "deltafin", filepath.Base(c.DataDir))
}

func TestFormatBytes(t *testing.T) {
	t.Parallel()
	require.Equal(t, "999 B", app.FormatBytes(999))
	require.Equal(t, "1.7 TB", app.FormatBytes(1_700_000_000_000))
	require.Equal(t, "215.0 GB", app.FormatBytes(215_000_000_000))
}

// TestDoctorNamesModelDesktopAndLog: doctor says what is installed, whether
// the menu bar can show, where the log is and which build this is.
func TestDoctorNamesModelDesktopAndLog(t *testing.T) {
	t.Parallel()
	cfg := app.DefaultConfig(func(string) string { return "" })
	cfg.DataDir = t.TempDir()
	cfg.SessionBus, cfg.RuntimeDir = "", ""
	require.NoError(t, cfg.Validate())
	r := diagnose(t.Context(), cfg)
	require.Contains(t, r.Model, "not installed")
	require.Contains(t, r.MenuBar, "DBUS_SESSION_BUS_ADDRESS is unset")
	require.True(t, strings.HasSuffix(r.MenuBar, "(use `deltafin serve` on a headless machine)"), "the whole advice, not an ellipsis: %s", r.MenuBar)
	require.NotContains(t, r.MenuBar, "app:")
	require.Equal(t, filepath.Join(cfg.DataDir, "logs", "deltafin.log"), r.LogFile)
	require.Contains(t, r.Version, "deltafin "+app.Version)
	entries, err := os.ReadDir(cfg.DataDir)
	require.NoError(t, err)
	require.Empty(t, entries, "doctor writes nothing")
}
