package app

import (
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
)

func TestInstallDemo(t *testing.T) {
	src := os.DirFS("../testdata/k3-tiny")
	dir := filepath.Join(t.TempDir(), "demo")
	require.NoError(t, InstallDemo(src, dir))
	for _, name := range []string{"config.json", "model-00002-of-000004.safetensors", "tiktoken.model"} {
		want, err := os.ReadFile(filepath.Join("../testdata/k3-tiny", name))
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		require.Equal(t, want, got, name)
	}
	// A truncated file (a crash mid-copy in an older version) is replaced;
	// an intact one is left alone.
	cfgPath := filepath.Join(dir, "config.json")
	require.NoError(t, os.WriteFile(cfgPath, []byte("{"), 0o644))
	before, err := os.Stat(filepath.Join(dir, "tiktoken.model"))
	require.NoError(t, err)
	require.NoError(t, InstallDemo(src, dir))
	want, _ := os.ReadFile("../testdata/k3-tiny/config.json")
	got, _ := os.ReadFile(cfgPath)
	require.Equal(t, want, got)
	after, err := os.Stat(filepath.Join(dir, "tiktoken.model"))
	require.NoError(t, err)
	require.Equal(t, before.ModTime(), after.ModTime())

	t.Run("unwritable", func(t *testing.T) {
		blocker := filepath.Join(t.TempDir(), "file")
		require.NoError(t, os.WriteFile(blocker, nil, 0o644))
		err := InstallDemo(fstest.MapFS{"config.json": {Data: []byte("{}")}}, filepath.Join(blocker, "demo"))
		require.ErrorIs(t, err, ErrDemo)
	})
}
