package downloader

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

const xetNodeDir = "testdata/xetnode"

// TestXetHashesMatchTheOfficialImplementation chunks generated data with
// @huggingface/xetchunk-wasm under node and checks that the Go hashes of
// the same chunks, the xorb (Merkle) hash and the file hash are the ones it
// computes: random bytes (many chunks), a run of zeros, a small file and a
// single byte.
func TestXetHashesMatchTheOfficialImplementation(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	require.NoError(t, err, "node is needed: `make deps` installs it")
	_, err = os.Stat(filepath.Join(xetNodeDir, "node_modules", "@huggingface", "xetchunk-wasm", "package.json"))
	require.NoError(t, err, "the @huggingface/xetchunk-wasm npm package is missing: run `make deps` (npm ci in downloader/%s)", xetNodeDir)
	rng := rand.New(rand.NewPCG(21, 21))
	random := make([]byte, 3<<20)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	for name, data := range map[string][]byte{
		"3 MiB random":    random,
		"zeros":           make([]byte, 300<<10),
		"small":           random[:5000],
		"one byte":        {42},
		"random and zero": append(append([]byte(nil), random[:1<<20]...), make([]byte, 1<<20)...),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "data")
			require.NoError(t, os.WriteFile(path, data, 0o644))
			cmd := exec.CommandContext(t.Context(), node, "chunks.mjs", path)
			cmd.Dir = xetNodeDir
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
			var chunks []XetChunk
			var off int64
			for i, c := range want.Chunks {
				h := XetChunkHash(data[off : off+c.Length])
				require.Equal(t, c.Hash, h.String(), "chunk %d at %d", i, off)
				chunks = append(chunks, XetChunk{Hash: h, Len: c.Length})
				off += c.Length
			}
			require.Equal(t, int64(len(data)), off)
			if len(data) > 1<<20 {
				require.Greater(t, len(chunks), 16, "enough chunks for a tree of several levels")
			}
			require.Equal(t, want.Xorb, XetXorbHash(chunks).String())
			require.Equal(t, want.File, XetFileHash(chunks).String())
		})
	}
}
