package xet

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func randomChunks(rng *rand.Rand, n int) []Chunk {
	out := make([]Chunk, n)
	for i := range out {
		for j := range out[i].Hash {
			out[i].Hash[j] = byte(rng.Uint32())
		}
		out[i].Len = 100 + rng.Int64N(10000)
	}
	return out
}

// TestSubtreesMergeToTheFileHash: a file's chunks cut into runs at random
// places, each run summarised by itself (and sent through its JSON wire
// form), merge left to right into the file's hash, for every size of file
// and of run, as xet-core's MerkleHashSubtree does.
func TestSubtreesMergeToTheFileHash(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 400 {
		n := rng.IntN(300)
		if trial%4 == 0 {
			n = rng.IntN(12)
		}
		chunks := randomChunks(rng, n)
		var cuts []int
		for i := 1; i < n; i++ {
			if rng.IntN(1+n/4) == 0 {
				cuts = append(cuts, i)
			}
		}
		cuts = append(cuts, n)
		var merged *Subtree
		start := 0
		for _, end := range cuts {
			s := NewSubtree(start == 0, chunks[start:end], end == n)
			b, err := json.Marshal(s)
			require.NoError(t, err)
			var back Subtree
			require.NoError(t, json.Unmarshal(b, &back))
			if merged == nil {
				merged = &back
			} else {
				require.NoError(t, merged.Merge(&back))
			}
			start = end
		}
		got, err := merged.FileHash()
		require.NoError(t, err)
		require.Equal(t, FileHash(chunks), got, "trial %d: %d chunks in runs ending at %v", trial, n, cuts)
	}
}

func TestSubtreeRefusesWhatCannotMerge(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	c := randomChunks(rng, 40)
	whole := NewSubtree(true, c, true)
	require.ErrorIs(t, whole.Merge(NewSubtree(false, c, true)), ErrSubtree)
	open := NewSubtree(false, c, false)
	_, err := open.FileHash()
	require.ErrorIs(t, err, ErrSubtree)
	var s Subtree
	require.ErrorIs(t, json.Unmarshal([]byte(`{"nodes":[],"levels":[[1,0]],"at_start":true,"at_end":true}`), &s), ErrSubtree)
}
