package xet

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const nodeDir = "../testdata/xetnode"

// official chunks and hashes data with @huggingface/xetchunk-wasm under node.
func official(t *testing.T, data []byte) (lengths []int64, hashes []string, xorb, file string) {
	t.Helper()
	node, err := exec.LookPath("node")
	require.NoError(t, err, "node is needed: `make deps` installs it")
	_, err = os.Stat(filepath.Join(nodeDir, "node_modules", "@huggingface", "xetchunk-wasm", "package.json"))
	require.NoError(t, err, "the @huggingface/xetchunk-wasm npm package is missing: run `make deps` (npm ci in downloader/testdata/xetnode)")
	path := filepath.Join(t.TempDir(), "data")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	cmd := exec.CommandContext(t.Context(), node, "chunks.mjs", path)
	cmd.Dir = nodeDir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "node: %s", stderr.String())
	var want struct {
		Chunks []struct {
			Length int64  `json:"length"`
			Hash   string `json:"hash"`
		} `json:"chunks"`
		Xorb, File string
	}
	require.NoError(t, json.Unmarshal(out, &want))
	for _, c := range want.Chunks {
		lengths = append(lengths, c.Length)
		hashes = append(hashes, c.Hash)
	}
	return lengths, hashes, want.Xorb, want.File
}

// generated is test data of several kinds: random bytes (hash matches cut
// chunks), zeros (no match: every chunk is MaxChunk), and text-like runs
// of few symbols.
func generated() map[string][]byte {
	rng := rand.New(rand.NewPCG(21, 21))
	random := make([]byte, 3<<20)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	mixed := make([]byte, 0, 9<<20)
	for len(mixed) < 9<<20 {
		n := 1 + rng.IntN(300<<10)
		switch rng.IntN(3) {
		case 0:
			mixed = append(mixed, random[:min(n, len(random))]...)
		case 1:
			mixed = append(mixed, make([]byte, n)...)
		default:
			for range n {
				mixed = append(mixed, "ab \n"[rng.IntN(4)])
			}
		}
	}
	return map[string][]byte{
		"3 MiB random":    random,
		"9 MiB mixed":     mixed,
		"zeros":           make([]byte, 300<<10),
		"small":           random[:5000],
		"one byte":        {42},
		"random and zero": append(append([]byte(nil), random[:1<<20]...), make([]byte, 1<<20)...),
	}
}

// TestChunksMatchTheOfficialImplementation checks the Go chunking (the
// boundaries, of the Legacy rule that the package implements), the chunk hashes, the xorb (Merkle) hash and the file hash
// of generated data against @huggingface/xetchunk-wasm under node.
func TestChunksMatchTheOfficialImplementation(t *testing.T) {
	t.Parallel()
	for name, data := range generated() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			lengths, hashes, xorb, file := official(t, data)
			chunks := Legacy.Chunks(data)
			got := make([]int64, len(chunks))
			for i, c := range chunks {
				got[i] = c.Len
			}
			require.Equal(t, lengths, got, "chunk boundaries")
			for i, c := range chunks {
				require.Equal(t, hashes[i], c.Hash.String(), "chunk %d", i)
			}
			if len(data) > 1<<20 {
				require.Greater(t, len(chunks), 16, "enough chunks for a tree of several levels")
			}
			require.Equal(t, xorb, XorbHash(chunks).String())
			require.Equal(t, file, FileHash(chunks).String())
		})
	}
}

// TestChunkingRestartsAtABoundary: chunking from any chunk boundary cuts
// the rest of the data as chunking from the start does, which is what
// checking a window of a file by itself relies on.
func TestChunkingRestartsAtABoundary(t *testing.T) {
	t.Parallel()
	data := generated()["9 MiB mixed"]
	for _, c := range []Chunker{Current, Legacy} {
		ends := c.Boundaries(data)
		for _, i := range []int{0, 1, 7, len(ends) / 2, len(ends) - 2} {
			var again []int
			for _, e := range c.Boundaries(data[ends[i]:]) {
				again = append(again, ends[i]+e)
			}
			require.Equal(t, ends[i+1:], again, "chunker %d restarted after chunk %d", c, i)
		}
	}
}

// TestCurrentChunkerDiffersOnlyBeforeMinChunk: the current rule cuts no
// chunk shorter than MinChunk (but a file's last), and cuts as the legacy
// rule does wherever the legacy rule cut none shorter.
func TestCurrentChunkerDiffersOnlyBeforeMinChunk(t *testing.T) {
	t.Parallel()
	for name, data := range generated() {
		cur, old := Current.Chunks(data), Legacy.Chunks(data)
		short := false
		for i, c := range cur {
			require.True(t, c.Len >= MinChunk || i == len(cur)-1, "%s: chunk %d is %d bytes", name, i, c.Len)
		}
		for i, c := range old {
			short = short || (c.Len < MinChunk && i < len(old)-1)
		}
		if !short {
			require.Equal(t, old, cur, name)
		}
		if name == "random and zero" {
			require.True(t, short, "the data where the rules differ")
			require.NotEqual(t, old, cur)
		}
	}
}

func TestHashText(t *testing.T) {
	t.Parallel()
	var h Hash
	for i := range h {
		h[i] = byte(i)
	}
	// The API doc's example (each 8-byte word reversed), without its typo.
	require.Equal(t, "07060504030201000f0e0d0c0b0a090817161514131211101f1e1d1c1b1a1918", h.String())
	back, err := ParseHash(h.String())
	require.NoError(t, err)
	require.Equal(t, h, back)
	_, err = ParseHash("xyz")
	require.Error(t, err)
}
