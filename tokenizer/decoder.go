package tokenizer

import "unicode/utf8"

// Decoder turns a stream of ids into text for streaming: a token may end in
// the middle of a UTF-8 character (byte-level BPE splits emoji and CJK), so
// Add holds back an incomplete character until the bytes that finish it
// arrive. The concatenation of every Add and the final Flush equals Decode of
// all the ids. A Decoder is not safe for concurrent use.
type Decoder struct {
	t   *Tokenizer
	buf []byte // at most one incomplete character (≤ 3 bytes) between calls
}

// NewDecoder returns a Decoder with nothing buffered.
func (t *Tokenizer) NewDecoder() *Decoder { return &Decoder{t: t} }

// Add appends one id and returns the text it completes, possibly empty.
func (d *Decoder) Add(id int) string {
	d.buf = d.t.appendToken(d.buf, id)
	out, used := appendLossy(nil, d.buf, false)
	d.buf = append(d.buf[:0], d.buf[used:]...)
	return string(out)
}

// Flush returns what is still buffered, an incomplete character as U+FFFD,
// and resets the Decoder.
func (d *Decoder) Flush() string {
	out, _ := appendLossy(nil, d.buf, true)
	d.buf = d.buf[:0]
	return string(out)
}

// appendLossy appends b to dst as valid UTF-8, replacing each maximal
// subpart of an ill-formed sequence with one U+FFFD (Unicode's recommended
// practice, which Python and Rust follow). Unless final, a trailing
// incomplete but so far valid sequence is left unconsumed; used says how
// many bytes of b were consumed.
func appendLossy(dst, b []byte, final bool) (out []byte, used int) {
	i := 0
	for i < len(b) {
		c := b[i]
		if c < utf8.RuneSelf {
			dst = append(dst, c)
			i++
			continue
		}
		need, lo, hi := seqInfo(c)
		if need == 0 {
			dst = utf8.AppendRune(dst, utf8.RuneError)
			i++
			continue
		}
		// Count the bytes that continue the sequence validly.
		k := 1
		for k <= need && i+k < len(b) {
			x := b[i+k]
			if k > 1 {
				lo, hi = 0x80, 0xbf
			}
			if x < lo || x > hi {
				break
			}
			k++
		}
		switch {
		case k == need+1:
			dst = append(dst, b[i:i+k]...)
			i += k
		case i+k == len(b) && !final:
			return dst, i // incomplete: wait for more bytes
		default:
			dst = utf8.AppendRune(dst, utf8.RuneError)
			i += k
		}
	}
	return dst, i
}

// seqInfo returns how many continuation bytes follow lead byte c and the
// allowed range of the first of them (later ones are 0x80..0xbf); need is 0
// for a byte that cannot start a character.
func seqInfo(c byte) (need int, lo, hi byte) {
	switch {
	case c >= 0xc2 && c <= 0xdf:
		return 1, 0x80, 0xbf
	case c == 0xe0:
		return 2, 0xa0, 0xbf
	case c == 0xed:
		return 2, 0x80, 0x9f
	case c >= 0xe1 && c <= 0xef:
		return 2, 0x80, 0xbf
	case c == 0xf0:
		return 3, 0x90, 0xbf
	case c >= 0xf1 && c <= 0xf3:
		return 3, 0x80, 0xbf
	case c == 0xf4:
		return 3, 0x80, 0x8f
	}
	return 0, 0, 0
}
