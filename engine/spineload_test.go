package engine

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/internal/directio"
)

// spineLoadDir writes a single-file checkpoint with a BF16 matrix spanning
// three finite-check pieces, an F32 vector at an offset that is not
// 4096-aligned and a small F16 tensor, with random finite values; nan >= 0
// puts a NaN at that element of the matrix.
func spineLoadDir(t *testing.T, nan int) (string, []stTensor) {
	rng := rand.New(rand.NewPCG(1, 2))
	fill := func(n, size int) []byte {
		b := make([]byte, n*size)
		for i := 0; i < len(b); i += 2 {
			binary.LittleEndian.PutUint16(b[i:], uint16(rng.IntN(0x3f00))) // exponent below all-ones
		}
		return b
	}
	big := fill(1152*4096, 2) // 9 MiB: pieces of 4, 4 and 1 MiB
	if nan >= 0 {
		binary.LittleEndian.PutUint16(big[2*nan:], 0x7fc0)
	}
	ts := []stTensor{
		{"h", "F16", []int64{3}, fill(3, 2)},
		{"m", "BF16", []int64{1152, 4096}, big},
		{"v", "F32", []int64{1000}, fill(1000, 4)},
	}
	dir := t.TempDir()
	writeShard(t, filepath.Join(dir, "model.safetensors"), ts)
	return dir, ts
}

// plainSource hides ckpt.FileSource's type, so that loadPinned reads through
// ReadAt as it does for any Source it cannot read by descriptor.
type plainSource struct{ ckpt.Source }

// TestLoadPinnedReadsTheStoredBytes: direct reads, buffered reads and reads
// through a Source's ReadAt all give each tensor's stored bytes.
func TestLoadPinnedReadsTheStoredBytes(t *testing.T) {
	t.Parallel()
	dir, want := spineLoadDir(t, -1)
	for _, tc := range []struct {
		name string
		mode directio.Mode
		open ckpt.OpenSource
	}{
		{"direct", directio.Direct, ckpt.OpenFile},
		{"buffered", directio.Buffered, ckpt.OpenFile},
		{"ReadAt", directio.Direct, func(ctx context.Context, p string) (ckpt.Source, error) {
			s, err := ckpt.OpenFile(ctx, p)
			return plainSource{s}, err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ck, err := openCheckpoint(t.Context(), dir, tc.open)
			require.NoError(t, err)
			defer ck.close()
			var refs []*tensorRef
			for _, x := range want {
				refs = append(refs, ck.tensors[x.name])
			}
			views, st, err := loadPinned(t.Context(), dir, refs, tc.mode)
			require.NoError(t, err)
			for _, x := range want {
				require.Equal(t, x.data, views[ck.tensors[x.name]], x.name)
			}
			require.GreaterOrEqual(t, st.PinnedBytes, int64(len(want[1].data)))
		})
	}
}

// TestLoadPinnedRefusesNaNInAnyPiece: a NaN in the last finite-check piece
// of a matrix is found and named with its element and row, whichever
// reader checks it.
func TestLoadPinnedRefusesNaNInAnyPiece(t *testing.T) {
	t.Parallel()
	const at = 1152*4096 - 5 // in the third piece
	dir, _ := spineLoadDir(t, at)
	ck, err := openCheckpoint(t.Context(), dir, ckpt.OpenFile)
	require.NoError(t, err)
	defer ck.close()
	_, _, err = loadPinned(t.Context(), dir, []*tensorRef{ck.tensors["m"], ck.tensors["v"], ck.tensors["h"]}, directio.Direct)
	require.ErrorIs(t, err, ckpt.ErrNotFinite)
	require.ErrorContains(t, err, `model.safetensors: tensor "m": element 4718587 (row 1151)`)
}

// TestLoadPinnedNamesAShardCutAfterOpen: a shard cut after its header was
// read fails the load with ckpt.ErrTruncated and the file's name.
func TestLoadPinnedNamesAShardCutAfterOpen(t *testing.T) {
	t.Parallel()
	dir, _ := spineLoadDir(t, -1)
	ck, err := openCheckpoint(t.Context(), dir, ckpt.OpenFile)
	require.NoError(t, err)
	defer ck.close()
	require.NoError(t, os.Truncate(filepath.Join(dir, "model.safetensors"), ck.tensors["m"].t.Offset+5<<20))
	_, _, err = loadPinned(t.Context(), dir, []*tensorRef{ck.tensors["m"], ck.tensors["v"]}, directio.Direct)
	require.ErrorIs(t, err, ckpt.ErrTruncated)
	require.ErrorContains(t, err, "model.safetensors ends at byte")
}
