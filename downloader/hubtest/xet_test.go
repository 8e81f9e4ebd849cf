package hubtest

import (
	"math/rand/v2"
	"testing"

	"github.com/deltafin/deltafin/downloader/xet"
	"github.com/stretchr/testify/require"
)

// sized is n chunks of one size with random hashes.
func sized(n int, size int64) []xet.Chunk {
	rng := rand.New(rand.NewPCG(uint64(n), uint64(size)))
	out := make([]xet.Chunk, n)
	for i := range out {
		for j := range out[i].Hash {
			out[i].Hash[j] = byte(rng.Uint32())
		}
		out[i].Len = size
	}
	return out
}

// TestChunkHashesWindows: the CAS's windows grow as xet-core's
// (chunk_window_builder.rs's cases): to the chunks a dirty range touches,
// then on to the end of two stable chunks in a row, merging ranges that
// meet; with no stable chunks they run to the end of the file. The gap
// subtrees and the windows' own merge to the file hash.
func TestChunkHashesWindows(t *testing.T) {
	t.Parallel()
	const stable = 2 * xet.MinChunk
	for _, tc := range []struct {
		name    string
		chunks  []xet.Chunk
		dirty   [][2]int64
		windows [][2]int64
	}{
		{"extends to a stable boundary", sized(6, stable), [][2]int64{{1, stable + 1}}, [][2]int64{{0, 4 * stable}}},
		{"merges what the extension reaches", sized(8, stable), [][2]int64{{1, stable + 1}, {3*stable + 7, 3*stable + 42}}, [][2]int64{{0, 6 * stable}}},
		{"ends at the end of the file", sized(6, stable), [][2]int64{{4 * stable, 6 * stable}}, [][2]int64{{4 * stable, 6 * stable}}},
		{"stays apart when far apart", sized(20, stable), [][2]int64{{0, stable}, {14 * stable, 15 * stable}}, [][2]int64{{0, 3 * stable}, {14 * stable, 17 * stable}}},
		{"no stable chunk: to the end", sized(4, xet.MaxChunk), [][2]int64{{0, xet.MaxChunk}}, [][2]int64{{0, 4 * xet.MaxChunk}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			resp := chunkHashes(tc.chunks, tc.dirty)
			var got [][2]int64
			for _, w := range resp.Windows {
				got = append(got, w.DirtyByteRange)
			}
			require.Equal(t, tc.windows, got)
			require.Len(t, resp.HashRanges, len(resp.Windows)+1)
			var all *xet.Subtree
			add := func(s *xet.Subtree) {
				if s == nil {
					return
				}
				if all == nil {
					all = s
					return
				}
				require.NoError(t, all.Merge(s))
			}
			var pos int64
			i := 0
			for k, w := range got {
				add(resp.HashRanges[k])
				for pos < w[0] {
					pos += tc.chunks[i].Len
					i++
				}
				j := i
				for pos < w[1] {
					pos += tc.chunks[j].Len
					j++
				}
				add(xet.NewSubtree(w[0] == 0, tc.chunks[i:j], w[1] == resp.FileSize))
				i = j
			}
			add(resp.HashRanges[len(got)])
			h, err := all.FileHash()
			require.NoError(t, err)
			require.Equal(t, xet.FileHash(tc.chunks), h)
		})
	}
}
