package app

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/engine"
	"github.com/deltafin/deltafin/internal/testref"
)

// addUnopenableDrive adds an expert drive at a path that is a file, so that
// opening it fails, and returns the path.
func addUnopenableDrive(t *testing.T, cfg Config) string {
	t.Helper()
	notADir := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(notADir, []byte("x"), 0o644))
	_, err := AddExpertDrive(cfg, DriveEntry{Path: notADir, Share: 1})
	require.NoError(t, err)
	return notADir
}

// TestOpenModelOpensDrivesFromItsOwnIndex: the added drives are opened from
// the experts the engine's one index parse found, during the open, and a
// drive that cannot be opened is skipped with a warning in the log the
// caller passed (the app's log file), not the process-wide default.
func TestOpenModelOpensDrivesFromItsOwnIndex(t *testing.T) {
	cfg := DefaultConfig(func(string) string { return "" })
	cfg.DataDir = t.TempDir()
	require.NoError(t, cfg.Validate())
	path := addUnopenableDrive(t, cfg)
	var buf bytes.Buffer
	m, err := OpenModel(t.Context(), cfg, ModelRef{Dir: filepath.Join("..", "testdata", "k3-tiny"), Log: slog.New(slog.NewTextHandler(&buf, nil))})
	require.NoError(t, err)
	require.NoError(t, m.Close())
	require.Contains(t, buf.String(), "expert drive skipped")
	require.Contains(t, buf.String(), path)
}

// TestOpenModelReportsAModelItCannotList: with a drive added, a model whose
// index cannot be read (a shard cut short) fails the open with the shard
// named; the drives are never opened.
func TestOpenModelReportsAModelItCannotList(t *testing.T) {
	cfg := DefaultConfig(func(string) string { return "" })
	cfg.DataDir = t.TempDir()
	require.NoError(t, cfg.Validate())
	addUnopenableDrive(t, cfg)
	dir := copyModel(t, "k3-tiny")
	shards, err := filepath.Glob(filepath.Join(dir, "model-*.safetensors"))
	require.NoError(t, err)
	require.NotEmpty(t, shards)
	last := shards[len(shards)-1]
	st, err := os.Stat(last)
	require.NoError(t, err)
	require.NoError(t, os.Truncate(last, st.Size()/2))
	var buf bytes.Buffer
	_, err = OpenModel(t.Context(), cfg, ModelRef{Dir: dir, Log: slog.New(slog.NewTextHandler(&buf, nil))})
	require.ErrorIs(t, err, engine.ErrCheckpoint)
	require.ErrorContains(t, err, filepath.Base(last))
	require.NotContains(t, buf.String(), "expert drive", "no drive is opened for a model that fails its index")
}

// copyModel copies the testdata model name into a temporary directory.
func copyModel(t *testing.T, name string) string {
	t.Helper()
	return testref.CopyModel(t, name, t.TempDir())
}
