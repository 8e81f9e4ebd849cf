package tokenizer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func fixtureTexts(t testing.TB) []string {
	raw, err := os.ReadFile(filepath.Join(fixtureDir, "tok_cases.json"))
	require.NoError(t, err)
	var fx struct {
		Cases []tokCase `json:"cases"`
	}
	require.NoError(t, json.Unmarshal(raw, &fx))
	var out []string
	for _, c := range fx.Cases {
		out = append(out, c.Text)
	}
	return out
}

// FuzzRoundTrip checks decode(encode(s)) == s for valid UTF-8, with and
// without specials, through Decode and the streaming Decoder, and that the
// heap merge agrees with tiktoken's scan.
func FuzzRoundTrip(f *testing.F) {
	tok := loadFixture(f)
	for _, s := range fixtureTexts(f) {
		if len(s) < 2000 {
			f.Add(s)
		}
	}
	f.Add("a\u00a0\u00a0\x1c\u2028 b's  CAFÉ'ſ x\r\n\r\n  \t")
	f.Add("\u0301\u0301a\u0300 ꙰ 〇〡 ᾼ ǅa")
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return // the property holds for valid UTF-8 only
		}
		ids := tok.Encode(s)
		require.Equal(t, s, tok.Decode(ids))
		for _, id := range ids {
			require.False(t, tok.IsSpecial(id))
		}
		require.Equal(t, s, tok.Decode(tok.EncodeSpecial(s)))
		require.Equal(t, s, strings.Join(Pieces(s), ""))
		d := tok.NewDecoder()
		var b strings.Builder
		for _, id := range ids {
			b.WriteString(d.Add(id))
		}
		b.WriteString(d.Flush())
		require.Equal(t, s, b.String())
		if len(s) >= 2 && len(s) < 4096 {
			var m bpe
			require.Equal(t, m.encodeScan(nil, s, tok.ranks), m.encodeHeap(nil, s, tok.ranks))
		}
	})
}

func benchText(n int) string {
	parts := []string{
		"The capital of France is Paris. ", "你好，世界！今天天气很好。", "def f(x):\n    return x**2  # comment\n",
		"ひらがなカタカナ한국어 Ελληνικά русский ", "numbers 3.14159 1,000,000 2026-11-30\n", "emoji 😀👍🏽 x 👨\u200d👩\u200d👧 ",
		"it's They'LL we've I'M   \t\n", "CamelCaseWord HTTPServer naïve café ",
	}
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		b.WriteString(parts[i%len(parts)])
	}
	return b.String()[:n]
}

// BenchmarkEncode encodes 1 MB inputs: mixed text, and single-class runs
// that tokenization_kimi.py cuts into 25,000-character pieces (the input
// that would make a quadratic merge blow up). The "scaling" metric is the
// time per byte at 1 MB divided by the time per byte at 64 kB of the same
// input (16 runs after a warm-up), measured in the same run: about 1 means
// linear; a quadratic merge would show about 16.
func BenchmarkEncode(b *testing.B) {
	tok := loadFixture(b)
	const size = 1 << 20
	inputs := []struct{ name, text string }{
		{"mixed", benchText(size)},
		{"one_letter", strings.Repeat("x", size)},
		{"spaces", strings.Repeat(" ", size)},
		{"cjk", strings.Repeat("天", size/3)},
	}
	for _, in := range inputs {
		b.Run(in.name, func(b *testing.B) {
			small := in.text[:len(in.text)/16]
			tok.Encode(small) // warm up: class table, allocator
			start := time.Now()
			for range 16 {
				tok.Encode(small)
			}
			smallPerByte := float64(time.Since(start)) / float64(16*len(small))
			b.SetBytes(int64(len(in.text)))
			b.ResetTimer()
			for b.Loop() {
				tok.Encode(in.text)
			}
			b.StopTimer()
			bigPerByte := float64(b.Elapsed()) / float64(b.N) / float64(len(in.text))
			b.ReportMetric(bigPerByte/smallPerByte, "scaling")
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	tok := loadFixture(b)
	ids := tok.Encode(benchText(1 << 20))
	b.SetBytes(1 << 20)
	for b.Loop() {
		tok.Decode(ids)
	}
}

// BenchmarkLongPiece merges one 25,000-byte piece (the longest the input
// splitting lets through, for a one-byte character) of spaces and of
// letters. "scaling" is the time per byte relative to a piece 16 times
// shorter, measured in the same run: about 1 for the heap merge, where
// tiktoken's scan would be about 16.
func BenchmarkLongPiece(b *testing.B) {
	tok := loadFixture(b)
	for _, c := range []string{" ", "x", "ab"} {
		b.Run(fmt.Sprintf("%q", c), func(b *testing.B) {
			piece := strings.Repeat(c, 25_000/len(c))
			short := piece[:len(piece)/16]
			var m bpe
			m.encode(nil, short, tok.ranks)
			start := time.Now()
			for range 16 {
				m.encode(nil, short, tok.ranks)
			}
			shortPerByte := float64(time.Since(start)) / float64(16*len(short))
			b.SetBytes(int64(len(piece)))
			b.ResetTimer()
			for b.Loop() {
				m.encode(nil, piece, tok.ranks)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed())/float64(b.N)/float64(len(piece))/shortPerByte, "scaling")
		})
	}
}
