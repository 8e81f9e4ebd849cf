package tokenizer

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// K3's real vocabulary (163,584 ranks) and cases from the real tiktoken core.
const k3Dir = "../../testdata/k3-tokenizer"

// k3VocabSHA256 is the hash moonshotai/Kimi-K3 pins for its tiktoken.model.
const k3VocabSHA256 = "b6c497a7469b33ced9c38afb1ad6e47f03f5e5dc05f15930799210ec050c5103"

type k3Fixture struct {
	VocabSHA256 string         `json:"vocab_sha256"`
	NRanks      int            `json:"n_ranks"`
	Specials    map[string]int `json:"special_tokens"`
	Gold        []int          `json:"gold_check"`
	Cases       []tokCase      `json:"cases"`
}

// The real vocabulary and its 6.5 MB of cases are loaded once per test binary.
var k3Once = sync.OnceValues(func() (*Tokenizer, *k3Fixture) {
	tok, err := Load(k3Dir)
	if err != nil {
		panic(err)
	}
	raw, err := os.ReadFile(filepath.Join(k3Dir, "tok_cases.json"))
	if err != nil {
		panic(err)
	}
	var fx k3Fixture
	if err := json.Unmarshal(raw, &fx); err != nil {
		panic(err)
	}
	return tok, &fx
})

func loadK3(t testing.TB) (*Tokenizer, *k3Fixture) {
	t.Helper()
	return k3Once()
}

func TestK3VocabFile(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(k3Dir, ModelFile))
	require.NoError(t, err)
	sum := sha256.Sum256(raw)
	require.Equal(t, k3VocabSHA256, hex.EncodeToString(sum[:]), "the tiktoken.model moonshotai/Kimi-K3 pins")

	tok, fx := loadK3(t)
	require.Equal(t, k3VocabSHA256, fx.VocabSHA256)
	require.Equal(t, 163_584, fx.NRanks)
	require.Equal(t, fx.NRanks, tok.NumRanks())
	require.Equal(t, 163_840, tok.VocabSize())
	require.Len(t, fx.Specials, NumSpecial)
	for name, id := range fx.Specials {
		got, ok := tok.SpecialID(name)
		require.True(t, ok, name)
		require.Equal(t, id, got, name)
		require.True(t, tok.IsSpecial(id), name)
		b, ok := tok.TokenBytes(id)
		require.True(t, ok)
		require.Equal(t, name, b)
	}
	// The ids the chat renderer depends on (docs/K3-ARCHITECTURE.md §7.1).
	for name, want := range map[string]int{"[BOS]": 163584, "[EOS]": 163585, "<|end_of_msg|>": 163586, "<|open|>": 163587, "<|close|>": 163588, "<|sep|>": 163589, "[UNK]": 163838, "[PAD]": 163839} {
		id, ok := tok.SpecialID(name)
		require.True(t, ok, name)
		require.Equal(t, want, id, name)
	}
	require.False(t, tok.IsSpecial(163_583))
	require.False(t, tok.IsSpecial(163_840))
	_, ok := tok.TokenBytes(163_840)
	require.False(t, ok)

	require.Equal(t, fx.Gold, tok.Encode("The capital of France is"), "the spec's gold ids")
	require.Equal(t, []int{1008, 10484, 318, 15383, 387}, fx.Gold)
	// The prompt of the spec's second oracle (K3-ARCHITECTURE §7.3).
	require.Equal(t, []int{1008, 10604, 19645, 306, 1088, 17860, 2403, 387}, tok.Encode("The largest planet in our solar system is"))
}

// Every case of the real tiktoken core, with specials as text and as ids.
func TestK3TokCases(t *testing.T) {
	tok, fx := loadK3(t)
	require.Len(t, fx.Cases, 27)
	long := 0
	for i, c := range fx.Cases {
		name := fmt.Sprintf("%02d_%d_bytes", i, len(c.Text))
		if len(c.Text) > 25_000 {
			long++
		}
		t.Run(name, func(t *testing.T) {
			ids := nonNil(tok.Encode(c.Text))
			requireSameIDs(t, c.IDs, ids, "case %d ids", i)
			requireSameIDs(t, c.IDsAllowSpecial, nonNil(tok.EncodeSpecial(c.Text)), "case %d ids_allow_special", i)
			for _, id := range ids {
				require.False(t, tok.IsSpecial(id), "Encode produced a special id")
			}
			require.Equal(t, c.Text, tok.Decode(c.IDs))
			require.Equal(t, c.Text, tok.Decode(c.IDsAllowSpecial))
		})
	}
	require.Equal(t, 4, long, "the two >25,000-character runs and the 60 kB and 1.1 MB documents")
}

// requireSameIDs compares id lists and, on a mismatch, names the first
// differing position instead of printing half a million ids.
func requireSameIDs(t *testing.T, want, got []int, msg string, args ...any) {
	t.Helper()
	n := min(len(want), len(got))
	for i := range n {
		if want[i] != got[i] {
			lo, hi := max(0, i-3), min(n, i+4)
			t.Fatalf("%s: first difference at %d of %d/%d ids: want …%v…, got …%v…", fmt.Sprintf(msg, args...), i, len(want), len(got), want[lo:hi], got[lo:hi])
		}
	}
	if len(want) != len(got) {
		t.Fatalf("%s: want %d ids, got %d (equal up to %d)", fmt.Sprintf(msg, args...), len(want), len(got), n)
	}
}

// BenchmarkLoadK3 loads K3's real 163,584-rank vocabulary from disk, as a
// server start does.
func BenchmarkLoadK3(b *testing.B) {
	for b.Loop() {
		if _, err := Load(k3Dir); err != nil {
			b.Fatal(err)
		}
	}
}
