package cli

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"runtime"
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
