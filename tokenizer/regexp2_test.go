package tokenizer

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
	"github.com/stretchr/testify/require"
)

// oraclePattern is Kimi's pat_str in .NET syntax for regexp2, an
// independent backtracking engine: class intersection "&&[^\p{Han}]" becomes
// class subtraction "-[\p{Han}]", and the case-insensitive contractions are
// spelled out with Unicode simple case folding (which regexp2's (?i) does
// not do: U+017F long s folds to s).
const oraclePattern = `[\p{Han}]+` +
	`|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}-[\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}-[\p{Han}]]+` + contractions + `?` +
	`|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}-[\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}-[\p{Han}]]*` + contractions + `?` +
	`|\p{N}{1,3}` +
	`| ?[^\s\p{L}\p{N}]+[\r\n]*` +
	`|\s*[\r\n]+` +
	`|\s+(?!\S)` +
	`|\s+`

const contractions = `(?:'[sSſ]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])`

var oracle = regexp2.MustCompile(oraclePattern, regexp2.None)

func oraclePieces(t testing.TB, s string) []string {
	out := []string{}
	m, err := oracle.FindStringMatch(s)
	for ; m != nil && err == nil; m, err = oracle.FindNextMatch(m) {
		out = append(out, m.String())
	}
	require.NoError(t, err)
	return out
}

// The hand-coded pre-tokenizer agrees with the regex on the fixture texts
// and on random text drawn from every character class the pattern cares
// about.
func TestPiecesMatchRegexp2(t *testing.T) {
	for _, s := range fixtureTexts(t) {
		if len(s) < 5000 {
			require.Equal(t, oraclePieces(t, s), Pieces(s), "%q", s)
		}
	}
	alphabet := []rune("aZ' sSſtTrReEvVmMlLdD\t\n\r\u00a0\u2028\u3000\x1c天〇〡ǅʰあ\u0301\u0903१1½.,!😀\u200d-_#")
	rng := rand.New(rand.NewPCG(7, 7))
	for range 3000 {
		var b strings.Builder
		for range rng.IntN(24) {
			b.WriteRune(alphabet[rng.IntN(len(alphabet))])
		}
		s := b.String()
		require.Equal(t, oraclePieces(t, s), Pieces(s), "%q", s)
	}
}

func FuzzPiecesMatchRegexp2(f *testing.F) {
	for _, s := range fixtureTexts(f) {
		if len(s) < 2000 {
			f.Add(s)
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) || len(s) > 2000 {
			return // the property holds for valid UTF-8 only
		}
		require.Equal(t, oraclePieces(t, s), Pieces(s))
	})
}
