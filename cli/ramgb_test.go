package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/deltafin/deltafin/app"
	"github.com/deltafin/deltafin/internal/sysinfo"
	"github.com/stretchr/testify/require"
)

func TestValidateRAMGB(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		ramGB   float64
		wantErr string
	}{
		{"measured", 0, ""},
		{"override", 64, ""},
		{"negative", -1, "--ram-gb -1 is not a RAM size in GB"},
		{"absurd", 1e9, "is not a RAM size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := app.Config{DataDir: t.TempDir(), RAMGB: tc.ramGB}
			err := c.Validate()
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
}

// TestRunLogsToTheLogFile: what opening the model says under deltafin run
// (here: --ram-gb above the memory available now) reaches the console and
// the log file, as under serve.
func TestRunLogsToTheLogFile(t *testing.T) {
	t.Parallel()
	mem, err := sysinfo.ReadMemory()
	require.NoError(t, err)
	if mem.Total-mem.Available < 2e9 {
		t.Skipf("this machine has %d of %d bytes available: no room between the two for --ram-gb", mem.Available, mem.Total)
	}
	cfg := app.DefaultConfig(func(string) string { return "" })
	cfg.DataDir = t.TempDir()
	cfg.RAMGB = float64(mem.Available+mem.Total) / 2 / 1e9
	require.NoError(t, cfg.Validate())
	cfg.Run = app.RunConfig{Model: filepath.Join("..", "testdata", "k3-tiny"), IDs: []int{1, 2, 3}, MaxNew: 2, JSON: true, Temperature: greedy()}
	var stdout, stderr bytes.Buffer
	require.NoError(t, runPrompt(t.Context(), cfg, &stdout, &stderr))
	require.Contains(t, stderr.String(), "is more than the")
	b, err := os.ReadFile(app.LogPath(cfg))
	require.NoError(t, err)
	require.Contains(t, string(b), "level=WARN")
	require.Contains(t, string(b), "is more than the")
}
