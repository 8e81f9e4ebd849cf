package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

const fixtureDir = "../testdata/tokenizer"

func loadFixture(t testing.TB) *Tokenizer {
	t.Helper()
	tok, err := Load(fixtureDir)
	require.NoError(t, err)
	return tok
}

type tokCase struct {
	Text            string   `json:"text"`
	Pieces          []string `json:"pieces"`
	IDs             []int    `json:"ids"`
	IDsAllowSpecial []int    `json:"ids_allow_special"`
}

func TestTokCases(t *testing.T) {
	tok := loadFixture(t)
	raw, err := os.ReadFile(filepath.Join(fixtureDir, "tok_cases.json"))
	require.NoError(t, err)
	var fx struct {
		NRanks   int            `json:"n_ranks"`
		Specials map[string]int `json:"special_tokens"`
		Cases    []tokCase      `json:"cases"`
	}
	require.NoError(t, json.Unmarshal(raw, &fx))
	require.Equal(t, fx.NRanks, tok.NumRanks())
	require.Equal(t, fx.NRanks+NumSpecial, tok.VocabSize())
	require.Len(t, fx.Specials, NumSpecial)
	for name, id := range fx.Specials {
		got, ok := tok.SpecialID(name)
		require.True(t, ok, name)
		require.Equal(t, id, got, name)
	}
	require.Len(t, fx.Cases, 25)
	long := 0
	for i, c := range fx.Cases {
		name := c.Text
		if len(name) > 40 {
			name = name[:40]
		}
		t.Run(strings.ReplaceAll(name, "/", "_"), func(t *testing.T) {
			if c.Pieces != nil {
				require.Equal(t, c.Pieces, Pieces(c.Text), "case %d pieces", i)
			} else {
				long++
			}
			require.Equal(t, c.IDs, nonNil(tok.Encode(c.Text)), "case %d ids", i)
			require.Equal(t, c.IDsAllowSpecial, nonNil(tok.EncodeSpecial(c.Text)), "case %d ids_allow_special", i)
			require.Equal(t, c.Text, tok.Decode(c.IDs))
			require.Equal(t, c.Text, tok.Decode(c.IDsAllowSpecial))
		})
	}
	require.Equal(t, 2, long, "the fixture's two >25,000-character runs")
}

func nonNil(ids []int) []int {
	if ids == nil {
		return []int{}
	}
	return ids
}

// The same tiktoken files ship inside the k3-tiny checkpoint.
func TestLoadK3Tiny(t *testing.T) {
	tok, err := Load("../testdata/k3-tiny")
	require.NoError(t, err)
	require.Equal(t, 1024, tok.VocabSize())
	for name, want := range map[string]int{"[BOS]": 768, "[EOS]": 769, "<|end_of_msg|>": 770, "<|open|>": 771, "<|close|>": 772, "<|sep|>": 773, "[UNK]": 1022, "[PAD]": 1023} {
		id, ok := tok.SpecialID(name)
		require.True(t, ok, name)
		require.Equal(t, want, id, name)
	}
	ids := tok.Encode("The capital of France is")
	require.Equal(t, "The capital of France is", tok.Decode(ids))
	require.Equal(t, []int{771}, tok.EncodeSpecial("<|open|>"))
}

func writeFiles(t *testing.T, model, config string) string {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, ModelFile), []byte(model), 0o644))
	if config != "" {
		require.NoError(t, os.WriteFile(filepath.Join(dir, ConfigFile), []byte(config), 0o644))
	}
	return dir
}

func byteModel(extra ...string) string {
	var b strings.Builder
	for i := range 256 {
		b.WriteString(b64([]byte{byte(i)}))
		b.WriteString(" ")
		b.WriteString(itoa(i))
		b.WriteString("\n")
	}
	for i, e := range extra {
		b.WriteString(e + " " + itoa(256+i) + "\n")
	}
	return b.String()
}

func TestLoadErrors(t *testing.T) {
	good := byteModel()
	cases := []struct {
		name, model, config string
		wantErr             error
		msg                 string
	}{
		{"no config", good, "", ErrMissing, ConfigFile},
		{"bad json", good, "{", ErrFormat, ConfigFile},
		{"rank gap", strings.Replace(good, "AQ== 1\n", "AQ== 7\n", 1), "{}", ErrFormat, "rank"},
		{"one field", strings.Replace(good, "AQ== 1\n", "AQ==\n", 1), "{}", ErrFormat, "fields"},
		{"bad base64", strings.Replace(good, "AQ== 1\n", "!!!! 1\n", 1), "{}", ErrFormat, "base64"},
		{"missing byte", strings.Replace(good, "AQ== 1\n", b64([]byte("ab"))+" 1\n", 1), "{}", ErrFormat, "0x01"},
		{"duplicate token", good + "AA== 256\n", "{}", ErrFormat, "repeats"},
		{"special out of range", good, `{"added_tokens_decoder":{"12":{"content":"x"}}}`, ErrFormat, "outside"},
		{"special not an id", good, `{"added_tokens_decoder":{"x":{"content":"x"}}}`, ErrFormat, "not an id"},
		{"special empty", good, `{"added_tokens_decoder":{"256":{"content":""}}}`, ErrFormat, "no valid content"},
		{"special twice", good, `{"added_tokens_decoder":{"256":{"content":"<a>"},"257":{"content":"<a>"}}}`, ErrFormat, "names both"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(writeFiles(t, c.model, c.config))
			require.ErrorIs(t, err, c.wantErr)
			require.ErrorContains(t, err, c.msg)
		})
	}
	_, err := Load(t.TempDir())
	require.ErrorIs(t, err, ErrMissing)
	require.ErrorContains(t, err, ModelFile)

	tok, err := Load(writeFiles(t, good, "{}"))
	require.NoError(t, err)
	id, ok := tok.SpecialID("<|reserved_token_300|>")
	require.True(t, ok, "unnamed specials get the default spelling")
	require.Equal(t, 300, id)
}

func TestDecodeLossy(t *testing.T) {
	tok := loadFixture(t)
	byteIDs := func(b ...byte) []int {
		ids := make([]int, len(b))
		for i, x := range b {
			ids[i] = tok.Encode(string([]byte{x}))[0]
		}
		return ids
	}
	cases := []struct {
		name string
		in   []byte
		want string
	}{
		{"ascii", []byte("ok"), "ok"},
		{"truncated 3-byte is one replacement", []byte{0xe2, 0x82, 'x'}, "\uFFFDx"},
		{"lone continuation", []byte{0x80, 0x80}, "\uFFFD\uFFFD"},
		{"surrogate half", []byte{0xed, 0xa0, 0x80}, "\uFFFD\uFFFD\uFFFD"},
		{"overlong", []byte{0xc0, 0xaf}, "\uFFFD\uFFFD"},
		{"truncated at end", []byte{'a', 0xf0, 0x9f, 0x98}, "a\uFFFD"},
		{"emoji", []byte("😀"), "😀"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, tok.Decode(byteIDs(c.in...)))
		})
	}
	require.Equal(t, "<|open|>\uFFFD\uFFFD", tok.Decode([]int{771, -1, 5000}), "specials decode to their spelling, unknown ids to U+FFFD")
}

func TestDecoderStreams(t *testing.T) {
	tok := loadFixture(t)
	for _, s := range []string{"emoji 😀👍🏽 x 👨\u200d👩\u200d👧", "你好，世界！", "<|open|>a", "", "naïve"} {
		ids := tok.EncodeSpecial(s)
		d := tok.NewDecoder()
		var got strings.Builder
		for _, id := range ids {
			piece := d.Add(id)
			require.True(t, utf8.ValidString(piece))
			got.WriteString(piece)
		}
		got.WriteString(d.Flush())
		require.Equal(t, s, got.String())
	}
	// An emoji split over byte tokens only appears once complete.
	d := tok.NewDecoder()
	var out []string
	for _, b := range []byte("😀") {
		out = append(out, d.Add(tok.Encode(string([]byte{b}))[0]))
	}
	require.Equal(t, []string{"", "", "", "😀"}, out)
	d.Add(tok.Encode(string([]byte{0xf0}))[0])
	require.Equal(t, "\uFFFD", d.Flush(), "an unfinished character at the end is one U+FFFD")
	require.Equal(t, "a", d.Add(tok.Encode("a")[0]), "Flush resets")
}

func TestEncodeSpecialIsTrustedOnly(t *testing.T) {
	tok := loadFixture(t)
	open, _ := tok.SpecialID("<|open|>")
	for _, s := range []string{"<|open|>", "x<|open|>y", "<|sep|><|open|>"} {
		for _, id := range tok.Encode(s) {
			require.False(t, tok.IsSpecial(id), "Encode(%q) produced special %d", s, id)
		}
	}
	require.Contains(t, tok.EncodeSpecial("x<|open|>y"), open)
}

// The heap merge used for long pieces must make the same merges as
// tiktoken's scan.
func TestHeapMergeMatchesScan(t *testing.T) {
	tok := loadFixture(t)
	inputs := []string{strings.Repeat("x", 1000), strings.Repeat("ab", 300), strings.Repeat(" ", 777), strings.Repeat("the", 200)}
	raw, err := os.ReadFile(filepath.Join(fixtureDir, "tok_cases.json"))
	require.NoError(t, err)
	inputs = append(inputs, string(raw[:4000]))
	for _, s := range inputs {
		var b bpe
		scan := b.encodeScan(nil, s, tok.ranks)
		heap := b.encodeHeap(nil, s, tok.ranks)
		require.Equal(t, scan, heap)
	}
}
