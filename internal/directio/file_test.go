package directio_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
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
	require.ErrorIs(t, f.ReadAt(t.Context(), buf, 0), fs.ErrClosed, "a closed file")
	require.NoError(t, f.Close(), "a second Close")
}

// TestFileCloseWaitsForReads closes the file while readers read it in a
// loop: every read either returns the file's bytes or fs.ErrClosed, never
// another file's (a descriptor released under a read could be reused by
// the files opened meanwhile) — what `go test -race` checks for the
// descriptors themselves.
func TestFileCloseWaitsForReads(t *testing.T) {
	t.Parallel()
	path, want := writeFile(t, 64*directio.Align)
	other := filepath.Join(t.TempDir(), "other.bin")
	require.NoError(t, os.WriteFile(other, bytes.Repeat([]byte{0xa5}, 64*directio.Align), 0o644))
	f, err := directio.OpenFile(path)
	require.NoError(t, err)
	const readers = 8
	var wg sync.WaitGroup
	started := make(chan struct{}, readers)
	errs := make(chan error, readers)
	for r := range readers {
		wg.Go(func() {
			buf := directio.Buffer(4 * directio.Align)
			for i := 0; ; i++ {
				off := int64((r+i)%60) * directio.Align
				err := f.ReadAt(t.Context(), buf, off)
				if i == 0 {
					started <- struct{}{}
				}
				if errors.Is(err, fs.ErrClosed) {
					errs <- nil
					return
				}
				if err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(want[off:off+int64(len(buf))], buf) {
					errs <- fmt.Errorf("read at %d returned other bytes", off)
					return
				}
			}
		})
	}
	for range readers {
		<-started
	}
	// Files opened while the readers read take the lowest free
	// descriptors: the ones Close releases, if it releases them early.
	var opened []*os.File
	require.NoError(t, f.Close())
	for range 4 {
		o, err := os.Open(other)
		require.NoError(t, err)
		opened = append(opened, o)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	for _, o := range opened {
		require.NoError(t, o.Close())
	}
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
