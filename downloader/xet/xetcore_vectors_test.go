package xet

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// xetcoreVectors is testdata/xetcore_merkle_vectors.json: xet-core's own
// reference hashes (see testdata/README.md for where they come from).
type xetcoreVectors struct {
	Vectors []struct {
		Chunks []struct {
			Hash string `json:"hash"`
			Size int64  `json:"size"`
		} `json:"chunks"`
		XorbHash   string `json:"xorb_hash"`
		FileHashes []struct {
			Salt     string `json:"salt"`
			FileHash string `json:"file_hash"`
		} `json:"file_hashes"`
	} `json:"vectors"`
}

// TestXetCoreReferenceVectors checks the Merkle aggregation against the
// fixed vectors xet-core's test_correctness keeps "to ensure that other
// implementations or ports of these functions produce the correct hashes":
// the xorb hash, the file hash under each salt (the zero salt is a file's
// Xet hash), and — what a stream install's range check does — the file
// hash merged from subtrees of every two- and three-way split of the
// chunks, each sent through its JSON wire form as the CAS sends them.
func TestXetCoreReferenceVectors(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("testdata/xetcore_merkle_vectors.json")
	require.NoError(t, err)
	var v xetcoreVectors
	require.NoError(t, json.Unmarshal(b, &v))
	require.Len(t, v.Vectors, 18)
	wire := func(s *Subtree) *Subtree {
		b, err := json.Marshal(s)
		require.NoError(t, err)
		var back Subtree
		require.NoError(t, json.Unmarshal(b, &back))
		return &back
	}
	for i, vec := range v.Vectors {
		chunks := make([]Chunk, len(vec.Chunks))
		for j, c := range vec.Chunks {
			h, err := ParseHash(c.Hash)
			require.NoError(t, err)
			chunks[j] = Chunk{Hash: h, Len: c.Size}
		}
		root := XorbHash(chunks)
		require.Equal(t, vec.XorbHash, root.String(), "vector %d: xorb hash of %d chunks", i, len(chunks))
		var file string
		for _, fh := range vec.FileHashes {
			salt, err := ParseHash(fh.Salt)
			require.NoError(t, err)
			got := Hash{} // xet-core: no chunks, all zeros whatever the salt
			if len(chunks) > 0 {
				got = keyedHash((*[32]byte)(&salt), root[:])
			}
			require.Equal(t, fh.FileHash, got.String(), "vector %d: file hash with salt %s", i, fh.Salt)
			if salt == (Hash{}) {
				file = fh.FileHash
			}
		}
		require.NotEmpty(t, file, "vector %d has no unsalted file hash", i)
		require.Equal(t, file, FileHash(chunks).String(), "vector %d: FileHash", i)
		whole, err := NewSubtree(true, chunks, true).FileHash()
		require.NoError(t, err)
		require.Equal(t, file, whole.String(), "vector %d: one subtree", i)
		n := len(chunks)
		// Three-way splits (the CAS's before and after around a window
		// hashed here) and, with a run left empty, two-way ones. mergeWindow
		// is the function the range check uses.
		for a := 0; a <= n; a++ {
			for z := a; z <= n; z++ {
				if n > 40 && (a%7 != 0 || z%5 != 0) {
					continue // the 64- and 100-chunk vectors: a sample of the splits
				}
				var before, after *Subtree
				if a > 0 {
					before = wire(NewSubtree(true, chunks[:a], false))
				}
				if z < n {
					after = wire(NewSubtree(false, chunks[z:], true))
				}
				window := NewSubtree(a == 0, chunks[a:z], z == n)
				got, err := mergeWindowForTest(before, window, after)
				require.NoError(t, err, "vector %d: split %d|%d|%d", i, a, z-a, n-z)
				require.Equal(t, file, got.String(), "vector %d: split %d|%d|%d", i, a, z-a, n-z)
			}
		}
	}
}

// mergeWindowForTest merges before, window and after left to right, as
// the downloader's range check does (downloader.mergeWindow).
func mergeWindowForTest(before, window, after *Subtree) (Hash, error) {
	all := window
	if before != nil {
		if err := before.Merge(window); err != nil {
			return Hash{}, err
		}
		all = before
	}
	if after != nil {
		if err := all.Merge(after); err != nil {
			return Hash{}, err
		}
	}
	return all.FileHash()
}
