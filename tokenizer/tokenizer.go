package tokenizer

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// NumSpecial is the number of reserved special ids that follow the ranks.
const NumSpecial = 256

// File names inside a checkpoint directory.
const (
	ModelFile  = "tiktoken.model"
	ConfigFile = "tokenizer_config.json"
)

// Size limits for the files Load reads: K3's tiktoken.model is about 2.5 MB
// and its config a few hundred kB, so these only stop a wrong or hostile file
// from being read into memory whole.
const (
	maxModelSize  = 64 << 20
	maxConfigSize = 16 << 20
	maxTokenLen   = 1 << 10
)

// The input-splitting limits of tokenization_kimi.py, in characters (code
// points): the text is cut into slices, and any run of more than
// maxSameClassRun whitespace or non-whitespace characters is cut too, which
// changes the ids of such runs, so they are part of the contract.
const (
	maxEncodeChars  = 400_000
	maxSameClassRun = 25_000
)

var (
	// ErrFormat is wrapped by every error about a malformed tiktoken.model
	// or tokenizer_config.json.
	ErrFormat = errors.New("tokenizer: malformed tokenizer files")
	// ErrMissing is wrapped when a tokenizer file is absent from the directory.
	ErrMissing = errors.New("tokenizer: missing tokenizer file")
)

// Tokenizer is a loaded vocabulary. It is immutable and safe for concurrent use.
type Tokenizer struct {
	ranks    map[string]int // token bytes → rank
	tokens   []string       // id → bytes, ranks then specials
	nRanks   int
	specials map[string]int
	// byFirst lists the specials by their first byte, longest first, for
	// finding them in trusted text.
	byFirst [256][]string
}

// Load reads tiktoken.model and tokenizer_config.json from dir.
func Load(dir string) (*Tokenizer, error) {
	model, err := readBounded(filepath.Join(dir, ModelFile), maxModelSize)
	if err != nil {
		return nil, err
	}
	config, err := readBounded(filepath.Join(dir, ConfigFile), maxConfigSize)
	if err != nil {
		return nil, err
	}
	return Parse(model, config)
}

func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s", ErrMissing, path)
		}
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("tokenizer: reading %s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrFormat, path, limit)
	}
	return b, nil
}

// Parse builds a Tokenizer from the contents of tiktoken.model and
// tokenizer_config.json. Ranks must be contiguous from 0 in file order and
// all 256 single bytes must be tokens, so every byte string can be encoded.
func Parse(model, config []byte) (*Tokenizer, error) {
	t := &Tokenizer{ranks: make(map[string]int, bytes.Count(model, []byte("\n"))+1)}
	lineNo := 0
	for line := range bytes.Lines(model) {
		lineNo++
		line = bytes.TrimRight(line, "\r\n")
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		fields := bytes.Fields(line)
		if len(fields) != 2 {
			return nil, fmt.Errorf("%w: %s line %d: want \"base64 rank\", got %d fields", ErrFormat, ModelFile, lineNo, len(fields))
		}
		if base64.StdEncoding.DecodedLen(len(fields[0])) > maxTokenLen {
			return nil, fmt.Errorf("%w: %s line %d: token longer than %d bytes", ErrFormat, ModelFile, lineNo, maxTokenLen)
		}
		tok, err := base64.StdEncoding.DecodeString(string(fields[0]))
		if err != nil || len(tok) == 0 {
			return nil, fmt.Errorf("%w: %s line %d: bad base64 token %q", ErrFormat, ModelFile, lineNo, fields[0])
		}
		rank, err := strconv.Atoi(string(fields[1]))
		if err != nil || rank != len(t.tokens) {
			return nil, fmt.Errorf("%w: %s line %d: rank %q, want %d (ranks must run 0,1,2,… in file order)", ErrFormat, ModelFile, lineNo, fields[1], len(t.tokens))
		}
		if prev, dup := t.ranks[string(tok)]; dup {
			return nil, fmt.Errorf("%w: %s line %d: token %q repeats rank %d", ErrFormat, ModelFile, lineNo, tok, prev)
		}
		t.ranks[string(tok)] = rank
		t.tokens = append(t.tokens, string(tok))
	}
	t.nRanks = len(t.tokens)
	for b := range 256 {
		if _, ok := t.ranks[string([]byte{byte(b)})]; !ok {
			return nil, fmt.Errorf("%w: %s lacks the single byte 0x%02x (all 256 bytes must be tokens)", ErrFormat, ModelFile, b)
		}
	}
	names, err := parseSpecials(config, t.nRanks)
	if err != nil {
		return nil, err
	}
	t.specials = make(map[string]int, NumSpecial)
	for i, name := range names {
		id := t.nRanks + i
		if prev, dup := t.specials[name]; dup {
			return nil, fmt.Errorf("%w: %s: special %q names both %d and %d", ErrFormat, ConfigFile, name, prev, id)
		}
		t.specials[name] = id
		t.tokens = append(t.tokens, name)
		t.byFirst[name[0]] = append(t.byFirst[name[0]], name)
	}
	for i := range t.byFirst {
		sort.Slice(t.byFirst[i], func(a, b int) bool { return len(t.byFirst[i][a]) > len(t.byFirst[i][b]) })
	}
	return t, nil
}

// parseSpecials returns the 256 special spellings: added_tokens_decoder's
// content where given, `<|reserved_token_{id}|>` otherwise.
func parseSpecials(config []byte, nRanks int) ([]string, error) {
	var cfg struct {
		Added map[string]struct {
			Content *string `json:"content"`
		} `json:"added_tokens_decoder"`
	}
	if err := json.Unmarshal(config, &cfg); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrFormat, ConfigFile, err)
	}
	names := make([]string, NumSpecial)
	for i := range names {
		names[i] = fmt.Sprintf("<|reserved_token_%d|>", nRanks+i)
	}
	for key, tok := range cfg.Added {
		id, err := strconv.Atoi(key)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: added_tokens_decoder key %q is not an id", ErrFormat, ConfigFile, key)
		}
		if id < nRanks || id >= nRanks+NumSpecial {
			return nil, fmt.Errorf("%w: %s: special id %d is outside the reserved range [%d, %d)", ErrFormat, ConfigFile, id, nRanks, nRanks+NumSpecial)
		}
		if tok.Content == nil || *tok.Content == "" || !utf8.ValidString(*tok.Content) {
			return nil, fmt.Errorf("%w: %s: special id %d has no valid content", ErrFormat, ConfigFile, id)
		}
		names[id-nRanks] = *tok.Content
	}
	return names, nil
}

// VocabSize is the number of ids: the ranks plus the 256 specials.
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// NumRanks is the number of BPE ranks; ids from NumRanks on are specials.
func (t *Tokenizer) NumRanks() int { return t.nRanks }

// SpecialID returns the id of the special token spelled name, e.g. "<|open|>".
func (t *Tokenizer) SpecialID(name string) (int, bool) {
	id, ok := t.specials[name]
	return id, ok
}

// IsSpecial reports whether id is one of the 256 special ids.
func (t *Tokenizer) IsSpecial(id int) bool { return id >= t.nRanks && id < len(t.tokens) }

// TokenBytes returns the bytes of one id (a special's spelling for a
// special) and false for an id outside the vocabulary.
func (t *Tokenizer) TokenBytes(id int) (string, bool) {
	if id < 0 || id >= len(t.tokens) {
		return "", false
	}
	return t.tokens[id], true
}

// Encode returns the ids of s with special-token spellings encoded as plain
// text, so no input to Encode yields a special id.
func (t *Tokenizer) Encode(s string) []int {
	return t.encode(s, false)
}

// EncodeSpecial returns the ids of s with every special spelling (for
// example "<|open|>") turned into its special id. Use it for trusted
// structural text only, never for user text.
func (t *Tokenizer) EncodeSpecial(s string) []int {
	return t.encode(s, true)
}

func (t *Tokenizer) encode(s string, special bool) []int {
	ids := make([]int, 0, len(s)/3+1)
	var b bpe
	chunks(s, func(chunk string) {
		if !special {
			ids = t.encodeOrdinary(ids, chunk, &b)
			return
		}
		for chunk != "" {
			at, name := t.findSpecial(chunk)
			if at < 0 {
				ids = t.encodeOrdinary(ids, chunk, &b)
				break
			}
			ids = t.encodeOrdinary(ids, chunk[:at], &b)
			ids = append(ids, t.specials[name])
			chunk = chunk[at+len(name):]
		}
	})
	return ids
}

// findSpecial returns the leftmost special spelling in s (the longest one
// where several start at the same byte), or -1.
func (t *Tokenizer) findSpecial(s string) (int, string) {
	for i := 0; i < len(s); i++ {
		for _, name := range t.byFirst[s[i]] {
			if strings.HasPrefix(s[i:], name) {
				return i, name
			}
		}
	}
	return -1, ""
}

// encodeOrdinary appends the ids of s, pre-tokenized into pieces and each
// piece BPE-merged, as tiktoken's encode_ordinary does.
func (t *Tokenizer) encodeOrdinary(ids []int, s string, b *bpe) []int {
	for len(s) > 0 {
		n := nextPiece(s)
		piece := s[:n]
		s = s[n:]
		if r, ok := t.ranks[piece]; ok {
			ids = append(ids, r)
			continue
		}
		ids = b.encode(ids, piece, t.ranks)
	}
	return ids
}

// Pieces returns the pre-tokenizer's split of s (Kimi's regex pieces), for
// tests and diagnostics. It does not apply the long-input splitting.
func Pieces(s string) []string {
	out := []string{}
	for len(s) > 0 {
		n := nextPiece(s)
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

// chunks cuts s the way tokenization_kimi.py does before tiktoken sees it:
// slices of maxEncodeChars characters, each cut further so that no chunk
// holds more than maxSameClassRun consecutive whitespace or non-whitespace
// characters (whitespace as Python's str.isspace).
func chunks(s string, yield func(string)) {
	for len(s) > 0 {
		end, n := 0, 0
		for end < len(s) && n < maxEncodeChars {
			_, w := utf8.DecodeRuneInString(s[end:])
			end += w
			n++
		}
		splitRuns(s[:end], yield)
		s = s[end:]
	}
}

func splitRuns(s string, yield func(string)) {
	r, _ := utf8.DecodeRuneInString(s)
	inSpace := pySpace(r)
	run, start := 0, 0
	for i, r := range s {
		sp := pySpace(r)
		if sp != inSpace {
			inSpace, run = sp, 1
			continue
		}
		run++
		if run > maxSameClassRun {
			yield(s[start:i])
			start, run = i, 1
		}
	}
	yield(s[start:])
}

// Decode returns the text of ids, special ids as their spelling, with
// invalid UTF-8 replaced by U+FFFD per maximal invalid subsequence (as
// Python's bytes.decode(errors="replace") does). An id outside the
// vocabulary decodes to U+FFFD.
func (t *Tokenizer) Decode(ids []int) string {
	var buf []byte
	for _, id := range ids {
		buf = t.appendToken(buf, id)
	}
	out, _ := appendLossy(nil, buf, true)
	return string(out)
}

func (t *Tokenizer) appendToken(buf []byte, id int) []byte {
	if id < 0 || id >= len(t.tokens) {
		return utf8.AppendRune(buf, utf8.RuneError)
	}
	return append(buf, t.tokens[id]...)
}
