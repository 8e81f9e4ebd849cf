package checkpoint_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/checkpoint/sourcetest"
)

// TestFileSourceConformance runs the Source contract against a plain file
// (the downloader runs it against the mirror).
func TestFileSourceConformance(t *testing.T) {
	t.Parallel()
	path := filepath.Join("..", "testdata", "k3-tiny", "model-00002-of-000004.safetensors")
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	sourcetest.Run(t, func(t *testing.T) sourcetest.Fixture {
		src, err := ckpt.OpenFile(t.Context(), path)
		require.NoError(t, err)
		t.Cleanup(func() { src.(*ckpt.FileSource).Close() })
		return sourcetest.Fixture{Src: src, Path: path, Want: want}
	})
}
