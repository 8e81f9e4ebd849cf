package tokenizer

import (
	"sync"
	"unicode"
	"unicode/utf8"
)

// The pre-tokenizer is Kimi's pattern (tokenization_kimi.py pat_str), eight
// alternatives tried leftmost-first at each position:
//
//	1 [\p{Han}]+
//	2 [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	3 [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	4 \p{N}{1,3}
//	5  ?[^\s\p{L}\p{N}]+[\r\n]*
//	6 \s*[\r\n]+
//	7 \s+(?!\S)
//	8 \s+
//
// It is hand-coded rather than run through a backtracking regex engine
// (regexp2 could express it with .NET class subtraction and lookahead):
// each alternative's backtracking has a closed form, worked out below, so a
// piece costs one forward scan over its characters with one table lookup
// each. That keeps encoding linear in the input whatever it holds, needs no
// regex timeout, and is several times faster than a general engine. Every
// position starts a match of some alternative (a character is Han, a letter,
// a number, whitespace, or else alternative 5's class), so pieces tile the
// input and decode(encode(s)) == s.

// Character class bits. ux and lx are alternatives 2 and 3's letter classes,
// which exclude Han by class intersection.
const (
	cHan     = 1 << iota
	cLetter  // \p{L}
	cNumber  // \p{N}
	cSpace   // \s (Unicode White_Space)
	cPySpace // Python str.isspace: \s plus U+001C..U+001F
	cNewline // \r or \n
	cUX      // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]
	cLX      // [\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]
)

func classify(r rune) uint8 {
	var c uint8
	han := unicode.Is(unicode.Han, r)
	if han {
		c |= cHan
	}
	if unicode.IsLetter(r) {
		c |= cLetter
	}
	if unicode.IsNumber(r) {
		c |= cNumber
	}
	if unicode.IsSpace(r) {
		c |= cSpace | cPySpace
	}
	if r >= 0x1c && r <= 0x1f {
		c |= cPySpace
	}
	if r == '\r' || r == '\n' {
		c |= cNewline
	}
	if !han {
		both := unicode.In(r, unicode.Lm, unicode.Lo, unicode.M)
		if both || unicode.In(r, unicode.Lu, unicode.Lt) {
			c |= cUX
		}
		if both || unicode.Is(unicode.Ll, r) {
			c |= cLX
		}
	}
	return c
}

// bmpClasses caches classify for the Basic Multilingual Plane; the other
// planes are looked up directly.
var bmpClasses = sync.OnceValue(func() *[0x10000]uint8 {
	var t [0x10000]uint8
	for r := range t {
		t[r] = classify(rune(r))
	}
	return &t
})

// class returns the class bits of the character at the start of s and its
// width in bytes. An invalid byte is one character of U+FFFD's class (a
// symbol), so it stays in the pieces and round-trips.
func class(tab *[0x10000]uint8, s string) (uint8, int) {
	if c := s[0]; c < utf8.RuneSelf {
		return tab[c], 1
	}
	r, w := utf8.DecodeRuneInString(s)
	if r < 0x10000 {
		return tab[r], w
	}
	return classify(r), w
}

func pySpace(r rune) bool {
	if r < 0x10000 {
		return bmpClasses()[r]&cPySpace != 0
	}
	return false
}

// isA is [^\r\n\p{L}\p{N}]; isP is [^\s\p{L}\p{N}].
func isA(c uint8) bool { return c&(cNewline|cLetter|cNumber) == 0 }
func isP(c uint8) bool { return c&(cSpace|cLetter|cNumber) == 0 }

// nextPiece returns the length in bytes of the piece at the start of s
// (len(s) > 0).
func nextPiece(s string) int {
	tab := bmpClasses()
	c0, w0 := class(tab, s)
	// 1: a run of Han.
	if c0&cHan != 0 {
		return runOf(tab, s, 0, cHan)
	}
	// 2 and 3, first with the optional prefix character taken, then without
	// it (the order a backtracking engine tries them in).
	if isA(c0) && w0 < len(s) {
		if n := lowerWord(tab, s, w0); n > 0 {
			return n
		}
	}
	if n := lowerWord(tab, s, 0); n > 0 {
		return n
	}
	if isA(c0) && w0 < len(s) {
		if n := upperWord(tab, s, w0); n > 0 {
			return n
		}
	}
	if n := upperWord(tab, s, 0); n > 0 {
		return n
	}
	// 4: one to three numbers.
	if c0&cNumber != 0 {
		i := w0
		for k := 1; k < 3 && i < len(s); k++ {
			c, w := class(tab, s[i:])
			if c&cNumber == 0 {
				break
			}
			i += w
		}
		return i
	}
	// 5: an optional space, punctuation and symbols, trailing newlines.
	start := -1
	if s[0] == ' ' && w0 < len(s) {
		if c, _ := class(tab, s[w0:]); isP(c) {
			start = w0
		}
	}
	if start < 0 && isP(c0) {
		start = 0
	}
	if start >= 0 {
		i := start
		for i < len(s) {
			c, w := class(tab, s[i:])
			if !isP(c) {
				break
			}
			i += w
		}
		for i < len(s) && (s[i] == '\r' || s[i] == '\n') {
			i++
		}
		return i
	}
	// 6–8: s starts with whitespace (every other character has matched).
	// Scan the whole whitespace run, remembering its last newline and the
	// start of its last character.
	end, lastNL, last := 0, -1, 0
	for end < len(s) {
		c, w := class(tab, s[end:])
		if c&cSpace == 0 {
			break
		}
		if c&cNewline != 0 {
			lastNL = end
		}
		last = end
		end += w
	}
	if end == 0 {
		return w0 // unreachable: every character class is covered above
	}
	switch {
	case lastNL >= 0:
		// 6: \s* backtracks to the last newline, [\r\n]+ takes it.
		return lastNL + 1
	case end == len(s) || last > 0:
		// 7: the run to the end of input, or all of it but the last
		// character, which then leads the next piece (the lookahead
		// (?!\S) fails right before a non-space).
		if end == len(s) {
			return end
		}
		return last
	default:
		// 8: a single whitespace character before a non-space.
		return end
	}
}

// runOf returns the end of the run of characters with any of bits from i.
func runOf(tab *[0x10000]uint8, s string, i int, bits uint8) int {
	for i < len(s) {
		c, w := class(tab, s[i:])
		if c&bits == 0 {
			break
		}
		i += w
	}
	return i
}

// lowerWord matches ux* lx+ contraction? at i (alternative 2 without its
// prefix) and returns the end, or 0. The greedy ux* backtracks to the last
// position where lx+ can start: the end of the ux run if an lx character
// follows, else the run's last character that is in both classes (Lm, Lo,
// M), after which the lx+ run is that one character because the rest of the
// ux run is Lu/Lt.
func lowerWord(tab *[0x10000]uint8, s string, i int) int {
	lastBoth, lastBothW := -1, 0
	for i < len(s) {
		c, w := class(tab, s[i:])
		if c&cUX == 0 {
			break
		}
		if c&cLX != 0 {
			lastBoth, lastBothW = i, w
		}
		i += w
	}
	if i < len(s) {
		if c, _ := class(tab, s[i:]); c&cLX != 0 {
			return contraction(s, runOf(tab, s, i, cLX))
		}
	}
	if lastBoth < 0 {
		return 0
	}
	return contraction(s, lastBoth+lastBothW)
}

// upperWord matches ux+ lx* contraction? at i (alternative 3 without its
// prefix) and returns the end, or 0.
func upperWord(tab *[0x10000]uint8, s string, i int) int {
	j := runOf(tab, s, i, cUX)
	if j == i {
		return 0
	}
	return contraction(s, runOf(tab, s, j, cLX))
}

// contraction extends a word ending at i by (?i:'s|'t|'re|'ve|'m|'ll|'d).
// Case-insensitive matching uses Unicode simple case folding, under which
// U+017F (long s) is an s.
func contraction(s string, i int) int {
	if i >= len(s) || s[i] != '\'' {
		return i
	}
	rest := s[i+1:]
	if len(rest) >= 2 {
		a, b := rest[0]|0x20, rest[1]|0x20
		if isASCIILetter(rest[0]) && isASCIILetter(rest[1]) && (a == 'r' && b == 'e' || a == 'v' && b == 'e' || a == 'l' && b == 'l') {
			return i + 3
		}
	}
	if len(rest) >= 1 && isASCIILetter(rest[0]) {
		switch rest[0] | 0x20 {
		case 's', 't', 'm', 'd':
			return i + 2
		}
	}
	if len(rest) >= 2 && rest[0] == 0xc5 && rest[1] == 0xbf { // ſ
		return i + 3
	}
	return i
}

func isASCIILetter(b byte) bool { return b|0x20 >= 'a' && b|0x20 <= 'z' }
