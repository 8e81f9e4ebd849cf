package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/app"
	"github.com/deltafin/deltafin/engine"
	"github.com/deltafin/deltafin/tokenizer"
)

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
