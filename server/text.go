package server

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Text checks. encoding/json turns invalid UTF-8 bytes and lone UTF-16
// surrogate escapes ("\ud800") into U+FFFD without a word, so a prompt, a
// stop sequence or a tool schema would silently become something the
// client never sent. CheckText scans the raw body before it is decoded and
// names the first string at fault by its JSON path. It is the one place
// every JSON body passes (readBody, and the web page's ask box), so the
// decoders stay as they are.

// ErrBadText: a string in the request body is not valid Unicode text.
var ErrBadText = errors.New("invalid text")

// TextError says which string is bad and why.
type TextError struct {
	// Path is the JSON path of the string ("messages[0].content", or a
	// key's object path followed by the key for a bad key).
	Path string
	// Offset is the byte offset of the bad byte or escape in the body.
	Offset int
	Reason string
}

func (e *TextError) Error() string {
	where := e.Path
	if where == "" {
		where = "the body"
	}
	return fmt.Sprintf("%s: %s at byte %d; text must be valid UTF-8 without lone surrogates, it is refused rather than replaced by U+FFFD", where, e.Reason, e.Offset)
}

func (e *TextError) Unwrap() error { return ErrBadText }

// errNotJSON stops the scan of a body that is not well-formed JSON: the
// decoder that follows reports that, with its own words.
var errNotJSON = errors.New("not JSON")

// CheckText returns a *TextError for the first string of the JSON body
// (keys included) that holds invalid UTF-8 or a lone surrogate escape, and
// nil otherwise, malformed JSON included (its decoder refuses that).
func CheckText(body []byte) error {
	sc := textScanner{b: body}
	err := sc.value("")
	var te *TextError
	if errors.As(err, &te) {
		return te
	}
	return nil
}

type textScanner struct {
	b []byte
	i int
}

func (s *textScanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *textScanner) value(path string) error {
	s.ws()
	if s.i >= len(s.b) {
		return errNotJSON
	}
	switch s.b[s.i] {
	case '{':
		s.i++
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == '}' {
			s.i++
			return nil
		}
		for {
			s.ws()
			key, err := s.str(path)
			if err != nil {
				return err
			}
			s.ws()
			if s.i >= len(s.b) || s.b[s.i] != ':' {
				return errNotJSON
			}
			s.i++
			child := key
			if path != "" {
				child = path + "." + key
			}
			if err := s.value(child); err != nil {
				return err
			}
			if done, err := s.next('}'); done || err != nil {
				return err
			}
		}
	case '[':
		s.i++
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == ']' {
			s.i++
			return nil
		}
		for n := 0; ; n++ {
			if err := s.value(path + "[" + strconv.Itoa(n) + "]"); err != nil {
				return err
			}
			if done, err := s.next(']'); done || err != nil {
				return err
			}
		}
	case '"':
		_, err := s.str(path)
		return err
	}
	// A number, true, false or null: nothing to check.
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ',', ']', '}', ' ', '\t', '\n', '\r':
			return nil
		}
		s.i++
	}
	return nil
}

// next reads a ',' (more to come) or the closing byte (done).
func (s *textScanner) next(closing byte) (done bool, err error) {
	s.ws()
	if s.i >= len(s.b) {
		return false, errNotJSON
	}
	switch s.b[s.i] {
	case ',':
		s.i++
		return false, nil
	case closing:
		s.i++
		return true, nil
	}
	return false, errNotJSON
}

// str checks the string at s.i and returns its text (for a key, with
// escapes left as written: it only names a path).
func (s *textScanner) str(path string) (string, error) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return "", errNotJSON
	}
	start := s.i + 1
	bad := func(at int, reason string) error { return &TextError{Path: path, Offset: at, Reason: reason} }
	for i := start; i < len(s.b); {
		c := s.b[i]
		switch {
		case c == '"':
			s.i = i + 1
			return string(s.b[start:i]), nil
		case c == '\\':
			if i+1 >= len(s.b) {
				return "", errNotJSON
			}
			if s.b[i+1] != 'u' {
				i += 2
				continue
			}
			r, ok := hex4(s.b, i+2)
			if !ok {
				return "", errNotJSON
			}
			switch {
			case r >= 0xDC00 && r <= 0xDFFF:
				return "", bad(i, fmt.Sprintf(`a lone low surrogate \u%04x`, r))
			case r >= 0xD800 && r <= 0xDBFF:
				var lo rune
				ok := i+12 <= len(s.b) && s.b[i+6] == '\\' && s.b[i+7] == 'u'
				if ok {
					lo, ok = hex4(s.b, i+8)
				}
				if !ok || lo < 0xDC00 || lo > 0xDFFF {
					return "", bad(i, fmt.Sprintf(`a lone high surrogate \u%04x`, r))
				}
				i += 12
			default:
				i += 6
			}
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(s.b[i:])
			if r == utf8.RuneError && size == 1 {
				return "", bad(i, fmt.Sprintf("invalid UTF-8 (byte 0x%02x)", c))
			}
			i += size
		}
	}
	return "", errNotJSON
}

// hex4 reads the four hex digits at b[i:].
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(b[i:i+4]), 16, 32)
	return rune(v), err == nil
}
