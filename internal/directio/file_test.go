package directio_test

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/checkpoint/sourcetest"
	"github.com/deltafin/deltafin/internal/directio"
)

// writeFile writes a file of n pseudo-random bytes (fixed seed) and
// returns its path and content.
func writeFile(t *testing.T, n int) (string, []byte) {
	t.Helper()
	want := make([]byte, n)
	rng := rand.New(rand.NewPCG(31, 4096))
	for i := range want {
		want[i] = byte(rng.Uint32())
	}
	path := filepath.Join(t.TempDir(), "experts.bin")
	require.NoError(t, os.WriteFile(path, want, 0o644))
	return path, want
}

// TestFileConformance runs the Source contract against File, the third
// Source (a drive's replicas) beside the plain file and the mirror. The
// length is not a multiple of the alignment, so the last block's direct
// read comes back short.
func TestFileConformance(t *testing.T) {
	t.Parallel()
	path, want := writeFile(t, 5*directio.Align+123)
	sourcetest.Run(t, func(t *testing.T) sourcetest.Fixture {
		f, err := directio.OpenFile(path)
		require.NoError(t, err)
		t.Cleanup(func() { f.Close() })
		return sourcetest.Fixture{Src: f, Path: path, Want: want}
	})
}

// TestFileAlignedReads reads through the direct descriptor (aligned
// buffer, offset and length) and through the page cache (unaligned), and
// both return the file's bytes; a read after Close fails.
func TestFileAlignedReads(t *testing.T) {
	t.Parallel()
	path, want := writeFile(t, 5*directio.Align+123)
	f, err := directio.OpenFile(path)
	require.NoError(t, err)
	buf := directio.Buffer(2 * directio.Align)
	require.Zero(t, directio.Addr(buf)%directio.BufAlign)
	require.NoError(t, f.ReadAt(t.Context(), buf, directio.Align))
	require.True(t, bytes.Equal(want[directio.Align:3*directio.Align], buf), "aligned read")
	odd := make([]byte, 1000)
	require.NoError(t, f.ReadAt(t.Context(), odd, 4097))
	require.True(t, bytes.Equal(want[4097:5097], odd), "unaligned read")
	require.NoError(t, f.Close())
	require.Error(t, f.ReadAt(t.Context(), buf, 0), "a closed file")
}

// TestParseMode reads back every mode's name and names a wrong one.
func TestParseMode(t *testing.T) {
	t.Parallel()
	for _, m := range []directio.Mode{directio.Direct, directio.Buffered, directio.DropBehind} {
		got, err := directio.ParseMode(m.String())
		require.NoError(t, err)
		require.Equal(t, m, got)
	}
	_, err := directio.ParseMode("mmap")
	require.ErrorContains(t, err, `"mmap"`)
}
