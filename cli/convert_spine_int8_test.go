package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/deltafin/deltafin/app"
	"github.com/stretchr/testify/require"
)

// TestRunWithInt8Spine converts a copy of k3-tiny, then runs it with
// --spine int8: the run says it is approximate and generates; without the
// conversion it fails naming the command to run.
func TestRunWithInt8Spine(t *testing.T) {
	t.Parallel()
	model := filepath.Join(t.TempDir(), "k3-tiny")
	require.NoError(t, os.CopyFS(model, os.DirFS(filepath.Join("..", "testdata", "k3-tiny"))))
	cfg := app.DefaultConfig(func(string) string { return "" })
	cfg.DataDir = t.TempDir()
	cfg.Spine = "int8"
	require.NoError(t, cfg.Validate())
	cfg.Run = app.RunConfig{Temperature: greedy(), Model: model, IDs: []int{1, 2, 3}, MaxNew: 4, JSON: true}
	var stdout, stderr bytes.Buffer
	require.ErrorContains(t, runPrompt(t.Context(), cfg, &stdout, &stderr), "convert-spine-int8")

	var log bytes.Buffer
	require.NoError(t, convertSpineInt8(t.Context(), cfg, model, "", &log))
	require.Contains(t, log.String(), "100%")
	require.DirExists(t, model+".spine-int8")
	stdout.Reset()
	stderr.Reset()
	require.NoError(t, runPrompt(t.Context(), cfg, &stdout, &stderr))
	require.Contains(t, stderr.String(), "NOT the exact")
	var out RunOutput
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &out))
	require.Len(t, out.IDs, 4)

	cfg.Spine = "fp4"
	require.ErrorContains(t, cfg.Validate(), "--spine")
	require.ErrorContains(t, convertSpineInt8(t.Context(), cfg, "", "", &log), "--model")
}
