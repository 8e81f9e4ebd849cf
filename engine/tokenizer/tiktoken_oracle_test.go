package tokenizer

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The tiktoken core (npm tiktoken, OpenAI's Rust BPE in WebAssembly) run
// under node with K3's files: the oracle the real-vocabulary ids come from,
// and the speed Deltafin's encoder is held against.
const tiktokenNodeDir = "testdata/tiktokennode"

func tiktokenNode(t testing.TB, args ...string) *exec.Cmd {
	t.Helper()
	node, err := exec.LookPath("node")
	require.NoError(t, err, "node is needed: `make deps` installs it")
	_, err = os.Stat(filepath.Join(tiktokenNodeDir, "node_modules", "tiktoken", "package.json"))
	require.NoError(t, err, "the tiktoken npm package is missing: run `make deps` (npm ci in engine/tokenizer/testdata/tiktokennode)")
	dir, err := filepath.Abs(k3Dir)
	require.NoError(t, err)
	cmd := exec.CommandContext(t.Context(), node, append([]string{"encode.mjs", dir}, args...)...)
	cmd.Dir = tiktokenNodeDir
	return cmd
}

// The tiktoken core, run here on every case, gives the fixture's ids and
// ours: the fixture is what the core makes of K3's files today, and the
// harness the benchmark races is the same tokenizer.
func TestK3MatchesTiktokenCore(t *testing.T) {
	tok, fx := loadK3(t)
	cases, err := filepath.Abs(filepath.Join(k3Dir, "tok_cases.json"))
	require.NoError(t, err)
	cmd := tiktokenNode(t, "ids", cases)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "node: %s", stderr.String())
	var got []struct {
		IDs             []int `json:"ids"`
		IDsAllowSpecial []int `json:"ids_allow_special"`
	}
	require.NoError(t, json.Unmarshal(out, &got))
	require.Len(t, got, len(fx.Cases))
	for i, c := range fx.Cases {
		requireSameIDs(t, c.IDs, got[i].IDs, "case %d: tiktoken core against the fixture", i)
		requireSameIDs(t, c.IDsAllowSpecial, got[i].IDsAllowSpecial, "case %d: tiktoken core against the fixture (specials)", i)
		requireSameIDs(t, got[i].IDs, nonNil(tok.Encode(c.Text)), "case %d: ours against the tiktoken core", i)
		requireSameIDs(t, got[i].IDsAllowSpecial, nonNil(tok.EncodeSpecial(c.Text)), "case %d: ours against the tiktoken core (specials)", i)
	}
}

// k3Document is the fixture's largest case, the 1.1 MB mixed document.
func k3Document(fx *k3Fixture) string {
	doc := ""
	for _, c := range fx.Cases {
		if len(c.Text) > len(doc) {
			doc = c.Text
		}
	}
	return doc
}

// BenchmarkEncodeK3VsTiktoken encodes the 1.1 MB document with K3's real
// vocabulary, alternating one encode of ours with one of the tiktoken core
// in a node process started beforehand, so both run under the same load.
// It reports both speeds (MB/s is ours) and x-tiktoken, ours over theirs.
// The core's time excludes node's start, the load of the ranks and
// tokenization_kimi.py's cutting of the input, which the harness does once.
func BenchmarkEncodeK3VsTiktoken(b *testing.B) {
	tok, fx := loadK3(b)
	doc := k3Document(fx)
	text := filepath.Join(b.TempDir(), "doc.txt")
	require.NoError(b, os.WriteFile(text, []byte(doc), 0o644))

	cmd := tiktokenNode(b, "bench", text)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(b, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(b, err)
	require.NoError(b, cmd.Start())
	b.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	lines := bufio.NewScanner(stdout)
	lines.Buffer(nil, 1<<20)
	readLine := func(v any) {
		require.True(b, lines.Scan(), "node stopped: %v", lines.Err())
		require.NoError(b, json.Unmarshal(lines.Bytes(), v))
	}
	var ready struct {
		Bytes, IDs int
	}
	readLine(&ready)
	require.Equal(b, len(doc), ready.Bytes)
	require.Equal(b, len(tok.Encode(doc)), ready.IDs, "both encoders make the same number of ids")

	var ours, theirs time.Duration
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		start := time.Now()
		tok.Encode(doc)
		ours += time.Since(start)

		b.StopTimer()
		_, err := io.WriteString(stdin, strconv.Itoa(1)+"\n")
		require.NoError(b, err)
		var r struct{ NS int64 }
		readLine(&r)
		theirs += time.Duration(r.NS)
		b.StartTimer()
	}
	mbps := func(d time.Duration) float64 { return float64(len(doc)) * float64(b.N) / d.Seconds() / 1e6 }
	b.ReportMetric(mbps(theirs), "tiktoken-MB/s")
	b.ReportMetric(theirs.Seconds()/ours.Seconds(), "x-tiktoken")
}
