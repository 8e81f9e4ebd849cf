package chat

import (
	"strings"
)

// The scanner cuts generated text into plain text and XTML tags, as it
// streams. A tag is <|open|>name attrs<|sep|>, <|close|>name<|sep|> or
// <|end_of_msg|>; anything else, including a marker that is not followed by
// a well-formed tag body, is text. Text that could still become a tag is
// held back until it can be decided, and no longer than maxTagBody bytes
// past the marker, so a stray <|open|> in the reasoning delays the stream by
// at most that much.

// maxTagBody bounds a tag's body (name and attributes). Tool names and
// argument keys are short; a longer body is text.
const maxTagBody = 1024

type itemKind uint8

const (
	itemText  itemKind = iota
	itemOpen           // <|open|>name attrs<|sep|>
	itemClose          // <|close|>name<|sep|>
	itemEnd            // <|end_of_msg|>
)

// item is one piece of scanned text. raw is exactly the text it came from.
type item struct {
	kind  itemKind
	name  string // tag name
	attrs []attr // open tags; nil when badAttr
	bad   bool   // the body after the name is not a list of key="value"
	raw   string
}

type attr struct{ key, val string }

// get returns the value of key and whether the tag has it.
func (it item) get(key string) (string, bool) {
	for _, a := range it.attrs {
		if a.key == key {
			return a.val, true
		}
	}
	return "", false
}

// is reports whether it is the tag kind/name with no attributes.
func (it item) is(kind itemKind, name string) bool {
	return it.kind == kind && it.name == name && len(it.attrs) == 0 && !it.bad
}

// scanner holds the text not yet decided. lit marks the bytes of buf that
// came from ordinary tokens: a marker only starts at a byte that did not
// (TokenParser knows which; Parser.Events treats all text as undecided).
type scanner struct {
	buf string
	lit []bool
}

// add consumes text and returns the items it completes. Text items may be
// split anywhere a tag does not start. literal says text came from
// ordinary tokens, so it starts no marker.
func (s *scanner) add(text string, literal bool, out []item) []item {
	s.buf += text
	for range len(text) {
		s.lit = append(s.lit, literal)
	}
	for s.buf != "" {
		i := s.index(0)
		if i < 0 {
			keep := 0
			if last := len(s.buf) - 1; s.buf[last] == '<' && !s.lit[last] {
				keep = 1
			}
			out = appendText(out, s.buf[:len(s.buf)-keep])
			s.drop(len(s.buf) - keep)
			return out
		}
		out = appendText(out, s.buf[:i])
		s.drop(i)
		it, n, ok := s.tag()
		if !ok {
			return out // undecided: wait for more text
		}
		if n == 0 { // "<|" that starts no tag
			out = appendText(out, "<|")
			s.drop(2)
			continue
		}
		if it.kind == itemText {
			out = appendText(out, it.raw)
		} else {
			out = append(out, it)
		}
		s.drop(n)
	}
	return out
}

// index returns the first offset from which buf holds "<|" at a byte that
// may start a marker, or -1.
func (s *scanner) index(from int) int {
	for from < len(s.buf) {
		i := strings.Index(s.buf[from:], "<|")
		if i < 0 {
			return -1
		}
		if !s.lit[from+i] {
			return from + i
		}
		from += i + 1
	}
	return -1
}

func (s *scanner) drop(n int) {
	s.buf, s.lit = s.buf[n:], s.lit[n:]
}

// flush returns what is held back, as text.
func (s *scanner) flush(out []item) []item {
	out = appendText(out, s.buf)
	s.drop(len(s.buf))
	return out
}

func appendText(out []item, s string) []item {
	if s == "" {
		return out
	}
	if n := len(out); n > 0 && out[n-1].kind == itemText {
		out[n-1].raw += s
		return out
	}
	return append(out, item{kind: itemText, raw: s})
}

// tag looks at buf, which starts with a "<|" that may start a marker. It
// returns the item there and its length; a text item for a marker that
// starts no tag (only the marker is consumed); n == 0 for "<|" that is no
// marker; ok == false when more text is needed to decide. A tag's body
// runs to the next <|sep|> that may be a marker, so text from ordinary
// tokens in it (an attribute value spelling "<|") does not end it.
func (s *scanner) tag() (it item, n int, ok bool) {
	b := s.buf
	if strings.HasPrefix(b, EndOfMsg) {
		return item{kind: itemEnd, raw: EndOfMsg}, len(EndOfMsg), true
	}
	var mark string
	var kind itemKind
	switch {
	case strings.HasPrefix(b, Open):
		mark, kind = Open, itemOpen
	case strings.HasPrefix(b, Close):
		mark, kind = Close, itemClose
	default:
		for _, m := range []string{EndOfMsg, Open, Close} {
			if len(b) < len(m) && strings.HasPrefix(m, b) {
				return item{}, 0, false
			}
		}
		return item{}, 0, true
	}
	j := s.index(len(mark))
	switch {
	case j < 0 || j-len(mark) > maxTagBody:
		if j < 0 && len(b)-len(mark) <= maxTagBody {
			return item{}, 0, false
		}
		return item{kind: itemText, raw: mark}, len(mark), true
	case strings.HasPrefix(b[j:], Sep):
	case len(b[j:]) < len(Sep) && strings.HasPrefix(Sep, b[j:]):
		return item{}, 0, false
	default:
		return item{kind: itemText, raw: mark}, len(mark), true
	}
	name, attrs, good := parseTagBody(b[len(mark):j])
	if name == "" || (kind == itemClose && len(attrs) > 0) {
		return item{kind: itemText, raw: mark}, len(mark), true
	}
	n = j + len(Sep)
	return item{kind: kind, name: name, attrs: attrs, bad: !good, raw: b[:n]}, n, true
}

// parseTagBody splits `name key="v" key2="w"` (values escaped with &amp; and
// &quot;, as escapeAttr writes them).
func parseTagBody(body string) (name string, attrs []attr, ok bool) {
	name, rest, _ := strings.Cut(body, " ")
	if strings.ContainsAny(name, "\"=") {
		return "", nil, false
	}
	if rest == "" {
		return name, nil, !strings.HasSuffix(body, " ")
	}
	for rest != "" {
		key, after, found := strings.Cut(rest, `="`)
		if !found || key == "" || strings.ContainsAny(key, " \"") {
			return name, nil, false
		}
		val, tail, found := strings.Cut(after, `"`)
		if !found {
			return name, nil, false
		}
		attrs = append(attrs, attr{key, unescapeAttr(val)})
		if tail == "" {
			break
		}
		if tail[0] != ' ' {
			return name, nil, false
		}
		rest = tail[1:]
		if rest == "" {
			return name, nil, false
		}
	}
	return name, attrs, true
}

var attrUnescaper = strings.NewReplacer("&quot;", `"`, "&amp;", "&")

func unescapeAttr(s string) string { return attrUnescaper.Replace(s) }
