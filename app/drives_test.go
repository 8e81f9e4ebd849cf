package app

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/engine"
)

// copyModel copies the testdata model name into a temporary directory.
func copyModel(t *testing.T, name string) string {
	t.Helper()
	src := filepath.Join("..", "testdata", name)
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644))
	}
	return dst
}

// TestOpenDrivesReportsAModelItCannotList: with a drive added, a model
// whose experts cannot be listed (a shard cut short) is an error of the
// open, not a model without experts whose drives are silently ignored.
func TestOpenDrivesReportsAModelItCannotList(t *testing.T) {
	t.Parallel()
	cfg := Config{DataDir: t.TempDir()}
	_, err := AddExpertDrive(cfg, DriveEntry{Path: t.TempDir(), Share: 1})
	require.NoError(t, err)
	dir := copyModel(t, "k3-tiny")
	shards, err := filepath.Glob(filepath.Join(dir, "model-*.safetensors"))
	require.NoError(t, err)
	require.NotEmpty(t, shards)
	last := shards[len(shards)-1]
	st, err := os.Stat(last)
	require.NoError(t, err)
	require.NoError(t, os.Truncate(last, st.Size()/2))

	ds, err := openDrives(t.Context(), cfg, dir, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.ErrorIs(t, err, engine.ErrCheckpoint, "a cut shard is reported")
	require.ErrorContains(t, err, filepath.Base(last))
	require.Empty(t, ds)
}

// TestOpenDrivesWithoutExperts: a model with no MXFP4 routed experts (the
// float-expert Kimi-Linear layout) streams nothing, so its added drives are
// not used, and that is no error.
func TestOpenDrivesWithoutExperts(t *testing.T) {
	t.Parallel()
	cfg := Config{DataDir: t.TempDir()}
	_, err := AddExpertDrive(cfg, DriveEntry{Path: t.TempDir(), Share: 1})
	require.NoError(t, err)
	ds, err := openDrives(t.Context(), cfg, filepath.Join("..", "testdata", "kimi-linear-tiny", "hf"), nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	require.Empty(t, ds)
}

// TestOpenDrivesWarnsInTheGivenLog: a drive that cannot be opened is
// skipped with a warning in the log the caller passed (the app's log file),
// not the process-wide default logger.
func TestOpenDrivesWarnsInTheGivenLog(t *testing.T) {
	t.Parallel()
	cfg := Config{DataDir: t.TempDir()}
	notADir := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(notADir, []byte("x"), 0o644))
	_, err := AddExpertDrive(cfg, DriveEntry{Path: notADir, Share: 1})
	require.NoError(t, err)
	var buf bytes.Buffer
	ds, err := openDrives(t.Context(), cfg, filepath.Join("..", "testdata", "k3-tiny"), nil, slog.New(slog.NewTextHandler(&buf, nil)))
	require.NoError(t, err)
	require.Empty(t, ds)
	require.Contains(t, buf.String(), "expert drive skipped")
	require.Contains(t, buf.String(), notADir)
}
