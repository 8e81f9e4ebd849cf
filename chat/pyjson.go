package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
)

// The renderer serialises JSON the way Python's json.dumps does (with
// ensure_ascii=False), because that is what the model saw in training:
// non-ASCII kept as is, only control characters, quotes and backslashes
// escaped, floats in Python's repr, object keys in their original order
// unless sorted on purpose.

// jvalue is a parsed JSON value that keeps object key order.
type jvalue struct {
	kind byte // 'n' null, 'b' bool, '#' number, 's' string, 'o' object, 'a' array
	b    bool
	s    string // string value, or a number's literal text
	keys []string
	vals []jvalue // object values (parallel to keys) or array elements
}

// parseJSON parses exactly one JSON value from text (surrounding whitespace
// allowed). Repeated keys keep their first position and last value, as a
// Python dict does.
func parseJSON(text []byte) (jvalue, error) {
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	v, err := parseValue(dec)
	if err != nil {
		return jvalue{}, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return jvalue{}, errors.New("extra data after the JSON value")
	}
	return v, nil
}

func parseValue(dec *json.Decoder) (jvalue, error) {
	tok, err := dec.Token()
	if err != nil {
		return jvalue{}, err
	}
	switch x := tok.(type) {
	case nil:
		return jvalue{kind: 'n'}, nil
	case bool:
		return jvalue{kind: 'b', b: x}, nil
	case json.Number:
		return jvalue{kind: '#', s: string(x)}, nil
	case string:
		return jvalue{kind: 's', s: x}, nil
	case json.Delim:
		switch x {
		case '{':
			v := jvalue{kind: 'o'}
			index := map[string]int{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return jvalue{}, err
				}
				key, _ := k.(string)
				val, err := parseValue(dec)
				if err != nil {
					return jvalue{}, err
				}
				if i, dup := index[key]; dup {
					v.vals[i] = val
					continue
				}
				index[key] = len(v.keys)
				v.keys = append(v.keys, key)
				v.vals = append(v.vals, val)
			}
			_, err := dec.Token()
			return v, err
		case '[':
			v := jvalue{kind: 'a', vals: []jvalue{}}
			for dec.More() {
				val, err := parseValue(dec)
				if err != nil {
					return jvalue{}, err
				}
				v.vals = append(v.vals, val)
			}
			_, err := dec.Token()
			return v, err
		}
	}
	return jvalue{}, fmt.Errorf("unexpected JSON token %v", tok)
}

// sortKeys sorts every object's keys recursively (Python's _deep_sort).
func (v jvalue) sortKeys() jvalue {
	switch v.kind {
	case 'a':
		out := v
		out.vals = make([]jvalue, len(v.vals))
		for i, e := range v.vals {
			out.vals[i] = e.sortKeys()
		}
		return out
	case 'o':
		idx := make([]int, len(v.keys))
		for i := range idx {
			idx[i] = i
		}
		// Python sorts str keys by code point, which is byte order in UTF-8.
		sort.SliceStable(idx, func(a, b int) bool { return v.keys[idx[a]] < v.keys[idx[b]] })
		out := jvalue{kind: 'o', keys: make([]string, len(idx)), vals: make([]jvalue, len(idx))}
		for i, j := range idx {
			out.keys[i] = v.keys[j]
			out.vals[i] = v.vals[j].sortKeys()
		}
		return out
	}
	return v
}

// dumps is json.dumps(v, ensure_ascii=False); compact selects the
// separators (",", ":") instead of Python's default (", ", ": ").
func (v jvalue) dumps(compact bool) string {
	var b strings.Builder
	v.write(&b, compact)
	return b.String()
}

func (v jvalue) write(b *strings.Builder, compact bool) {
	comma, colon := ", ", ": "
	if compact {
		comma, colon = ",", ":"
	}
	switch v.kind {
	case 'n':
		b.WriteString("null")
	case 'b':
		b.WriteString(strconv.FormatBool(v.b))
	case '#':
		b.WriteString(pyNumber(v.s))
	case 's':
		writePyString(b, v.s)
	case 'a':
		b.WriteByte('[')
		for i, e := range v.vals {
			if i > 0 {
				b.WriteString(comma)
			}
			e.write(b, compact)
		}
		b.WriteByte(']')
	case 'o':
		b.WriteByte('{')
		for i, k := range v.keys {
			if i > 0 {
				b.WriteString(comma)
			}
			writePyString(b, k)
			b.WriteString(colon)
			v.vals[i].write(b, compact)
		}
		b.WriteByte('}')
	}
}

func writePyString(b *strings.Builder, s string) {
	b.WriteByte('"')
	writeEscaped(b, s)
	b.WriteByte('"')
}

// writeEscaped writes s as the inside of a JSON string, as json.dumps does
// with ensure_ascii=False.
func writeEscaped(b *strings.Builder, s string) {
	const hex = "0123456789abcdef"
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if c < 0x20 {
				b.WriteString(`\u00`)
				b.WriteByte(hex[c>>4])
				b.WriteByte(hex[c&15])
			} else {
				b.WriteByte(c)
			}
		}
	}
}

// pyNumber formats a JSON number literal as Python prints the value
// json.loads gives for it: integers exactly, anything with a fraction or an
// exponent as a float in repr form (1.0, 1e+16, 1e-05, Infinity on overflow).
func pyNumber(lit string) string {
	if !strings.ContainsAny(lit, ".eE") {
		if lit == "-0" {
			return "0"
		}
		return lit
	}
	f, _ := strconv.ParseFloat(lit, 64) // a json.Number is well formed; overflow gives ±Inf
	return pyFloat(f)
}

func pyFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case math.IsNaN(f):
		return "NaN"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // [-]d[.ddd]e±xx
	sign := ""
	if e[0] == '-' {
		sign, e = "-", e[1:]
	}
	mant, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	decpt := x + 1 // value = 0.digits × 10^decpt
	if decpt > -4 && decpt <= 16 {
		switch {
		case decpt <= 0:
			return sign + "0." + strings.Repeat("0", -decpt) + digits
		case decpt >= len(digits):
			return sign + digits + strings.Repeat("0", decpt-len(digits)) + ".0"
		default:
			return sign + digits[:decpt] + "." + digits[decpt:]
		}
	}
	m := digits[:1]
	if len(digits) > 1 {
		m += "." + digits[1:]
	}
	es := "+"
	if x < 0 {
		es, x = "-", -x
	}
	return fmt.Sprintf("%s%se%s%02d", sign, m, es, x)
}
