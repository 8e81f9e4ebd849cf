package safetensors

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
)

// scanner reads the JSON of a header in one pass without building a
// generic value: the full K3 has 497,220 tensors in about 100 MB of
// header JSON (and as much again in its index), which encoding/json
// decodes into a map of raw messages and then again entry by entry, with
// a garbage collection every few megabytes. The scanner keeps names as
// substrings of the input when they hold no escape (almost always), so a
// header costs a few allocations, not several per tensor.
//
// It accepts exactly JSON (RFC 8259) for the values it reads and checks
// the syntax of those it skips; a malformed input is an error naming
// what and where, never a panic.
type scanner struct {
	s string
	i int
}

// maxDepth bounds the nesting of values skipped (metadata), so that a
// hostile file cannot recurse without bound.
const maxDepth = 64

func (p *scanner) errorf(format string, args ...any) error {
	return fmt.Errorf("JSON at byte %d: %s", p.i, fmt.Sprintf(format, args...))
}

// ws skips JSON whitespace.
func (p *scanner) ws() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte without consuming it, or 0 at
// the end.
func (p *scanner) peek() byte {
	p.ws()
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

// expect consumes c after optional whitespace.
func (p *scanner) expect(c byte) error {
	if p.peek() != c {
		if p.i >= len(p.s) {
			return p.errorf("unexpected end, want %q", c)
		}
		return p.errorf("found %q, want %q", p.s[p.i], c)
	}
	p.i++
	return nil
}

// str reads a string. Without escapes it is a substring of the input.
func (p *scanner) str() (string, error) {
	if err := p.expect('"'); err != nil {
		return "", err
	}
	start := p.i
	escaped := false
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			if !escaped {
				return p.s[start : p.i-1], nil
			}
			var v string
			if err := json.Unmarshal([]byte(p.s[start-1:p.i]), &v); err != nil {
				return "", p.errorf("string: %v", err)
			}
			return v, nil
		case c == '\\':
			escaped = true
			p.i += 2
		case c < 0x20:
			return "", p.errorf("control character in a string")
		default:
			p.i++
		}
	}
	return "", p.errorf("unterminated string")
}

// int reads a JSON integer (no fraction or exponent: a size or an offset).
func (p *scanner) int() (int64, error) {
	p.ws()
	start, neg := p.i, false
	if p.i < len(p.s) && p.s[p.i] == '-' {
		neg = true
		p.i++
	}
	digits := p.i
	var n int64
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		d := int64(p.s[p.i] - '0')
		if n > (math.MaxInt64-d)/10 {
			return 0, p.errorf("integer %s… overflows", p.s[start:p.i])
		}
		n = n*10 + d
		p.i++
	}
	switch {
	case p.i == digits:
		return 0, p.errorf("want an integer")
	case p.s[digits] == '0' && p.i-digits > 1:
		return 0, p.errorf("integer with a leading zero")
	case p.i < len(p.s) && strings.IndexByte(".eE", p.s[p.i]) >= 0:
		return 0, p.errorf("want an integer, found a fraction or exponent")
	}
	if neg {
		n = -n
	}
	return n, nil
}

// ints appends the integers of a JSON array to dst. (Its length is
// bounded by the input's, which the caller bounds.)
func (p *scanner) ints(dst []int64) ([]int64, error) {
	err := p.array(func() error {
		v, err := p.int()
		dst = append(dst, v)
		return err
	})
	return dst, err
}

// array calls elem for each element of an array; elem must consume it.
func (p *scanner) array(elem func() error) error {
	if err := p.expect('['); err != nil {
		return err
	}
	if p.peek() == ']' {
		p.i++
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		switch p.peek() {
		case ',':
			p.i++
		case ']':
			p.i++
			return nil
		default:
			return p.errorf("want ',' or ']' in an array")
		}
	}
}

// object calls member for each key of an object; member must consume
// the value.
func (p *scanner) object(member func(key string) error) error {
	if err := p.expect('{'); err != nil {
		return err
	}
	if p.peek() == '}' {
		p.i++
		return nil
	}
	for {
		k, err := p.str()
		if err != nil {
			return err
		}
		if err := p.expect(':'); err != nil {
			return err
		}
		if err := member(k); err != nil {
			return err
		}
		switch p.peek() {
		case ',':
			p.i++
		case '}':
			p.i++
			return nil
		default:
			return p.errorf("want ',' or '}' in an object")
		}
	}
}

// skip consumes one value of any kind, checking its syntax.
func (p *scanner) skip(depth int) error {
	if depth > maxDepth {
		return p.errorf("nested deeper than %d", maxDepth)
	}
	switch c := p.peek(); {
	case c == '"':
		_, err := p.str()
		return err
	case c == '{':
		return p.object(func(string) error { return p.skip(depth + 1) })
	case c == '[':
		return p.array(func() error { return p.skip(depth + 1) })
	case c == '-' || c >= '0' && c <= '9':
		start := p.i
		for p.i < len(p.s) && strings.IndexByte("+-.eE0123456789", p.s[p.i]) >= 0 {
			p.i++
		}
		var f float64
		if err := json.Unmarshal([]byte(p.s[start:p.i]), &f); err != nil {
			return p.errorf("number %q: %v", p.s[start:p.i], err)
		}
		return nil
	default:
		for _, lit := range []string{"true", "false", "null"} {
			if strings.HasPrefix(p.s[p.i:], lit) {
				p.i += len(lit)
				return nil
			}
		}
		if p.i >= len(p.s) {
			return p.errorf("unexpected end, want a value")
		}
		return p.errorf("found %q, want a value", p.s[p.i])
	}
}

// end checks that only whitespace follows (safetensors pads the header
// with spaces).
func (p *scanner) end() error {
	if p.peek() != 0 || p.i < len(p.s) {
		return p.errorf("data after the end of the object")
	}
	return nil
}

// An IndexEntry is one member of a sharded checkpoint's weight_map: a
// tensor and the file that holds it.
type IndexEntry struct{ Name, File string }

// ParseIndex parses a model.safetensors.index.json: the entries of its
// weight_map in the file's order (the other members, such as metadata,
// are skipped, their syntax checked). The full K3's lists 497,220
// tensors; the entries share the few file names.
func ParseIndex(b []byte) ([]IndexEntry, error) {
	n := bytes.Count(b, []byte(".safetensors\""))
	entries := make([]IndexEntry, 0, n)
	files := map[string]string{}
	p := &scanner{s: string(b)}
	seen := false
	err := p.object(func(k string) error {
		if k != "weight_map" {
			return p.skip(0)
		}
		seen = true
		return p.object(func(name string) error {
			if p.peek() != '"' {
				return p.errorf("weight_map[%q] is not a file name", name)
			}
			f, err := p.str()
			if err != nil {
				return err
			}
			if g, ok := files[f]; ok {
				f = g
			} else {
				files[f] = f
			}
			entries = append(entries, IndexEntry{name, f})
			return nil
		})
	})
	if err == nil {
		err = p.end()
	}
	if err == nil && !seen {
		err = errors.New("no weight_map")
	}
	if err != nil {
		return nil, fmt.Errorf("%w: index JSON: %v", ErrFormat, err)
	}
	return entries, nil
}
