package chat

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/deltafin/deltafin/tokenizer"
)

// This file reads a tools block: the calls, their typed arguments
// reassembled into the JSON object OpenAI sends (a string value streams as
// it is generated, other values once their block closes and they parse as
// their declared type) or a json block's raw text.

// CallID is the id of call index (from 0) in the response responseID:
// "call_" and 24 hex digits of a hash of both, so the same response always
// names its calls the same way.
func CallID(responseID string, index int) string {
	h := sha256.Sum256([]byte(responseID + "\x00" + strconv.Itoa(index)))
	return "call_" + hex.EncodeToString(h[:12])
}

// argTypes are the type attributes K3 writes on an argument, with the JSON
// kind each must parse to.
var argTypes = map[string]byte{"string": 's', "number": '#', "boolean": 'b', "null": 'n', "object": 'o', "array": 'a'}

func (p *Parser) stepTools(it item, evs []Event) []Event {
	switch p.phase {
	case phTools:
		if blank(it) {
			p.gap.WriteString(it.raw)
			return markup(it.raw, evs)
		}
		switch {
		case it.kind == itemOpen && it.name == "call":
			return p.startCall(it, evs)
		case it.is(itemClose, "tools"):
			p.phase = phAfterTools
			return markup(it.raw, evs)
		case it.is(itemClose, "message"), it.kind == itemEnd:
			p.phase = phDone
			return markup(it.raw, evs)
		}
		return p.fail(evs, "unexpected "+describe(it)+" in the tools block", it.raw)
	case phCall:
		switch {
		case blank(it):
			return p.callMarkup(it.raw, evs)
		case it.kind == itemOpen && it.name == "argument":
			return p.startArg(it, evs)
		case it.kind == itemOpen && it.name == "json" && p.nargs == 0 && !it.bad:
			p.phase = phJSON
			return p.callMarkup(it.raw, evs)
		case it.is(itemClose, "call"):
			return p.endCall(it, evs)
		}
		return p.fail(evs, "unexpected "+describe(it)+" in the call", it.raw)
	case phArg:
		if !it.is(itemClose, "argument") {
			if p.argType == "string" {
				var b strings.Builder
				writeEscaped(&b, it.raw)
				return p.fragment(b.String(), it.raw, evs)
			}
			p.value.WriteString(it.raw)
			return p.callMarkup(it.raw, evs)
		}
		p.phase = phCall
		p.nargs++
		if p.argType == "string" {
			return p.fragment(`"`, it.raw, evs)
		}
		v := p.value.String()
		val, err := parseJSON([]byte(v))
		if err != nil || val.kind != argTypes[p.argType] {
			return p.fail(evs, fmt.Sprintf("argument %q is not a JSON %s: %s", p.argKey, p.argType, truncate(v, 64)), it.raw)
		}
		var b bytes.Buffer
		_ = json.Compact(&b, []byte(v)) // it parsed
		return p.fragment(b.String(), it.raw, evs)
	case phJSON:
		if it.is(itemClose, "json") {
			p.phase = phAfterJSON
			return p.callMarkup(it.raw, evs)
		}
		return p.fragment(it.raw, it.raw, evs)
	default: // phAfterJSON
		switch {
		case blank(it):
			return p.callMarkup(it.raw, evs)
		case it.is(itemClose, "call"):
			p.nargs = -1 // the json block was the arguments
			return p.endCall(it, evs)
		}
		return p.fail(evs, "unexpected "+describe(it)+" after the json block", it.raw)
	}
}

func (p *Parser) startCall(it item, evs []Event) []Event {
	name, _ := it.get("tool")
	if name == "" || it.bad {
		return p.fail(evs, "a call tag without a tool name: "+truncate(it.raw, 64), it.raw)
	}
	p.gap.Reset()
	index := len(p.calls)
	p.call = &Call{ID: CallID(p.po.ResponseID, index), Name: name}
	p.callRaw.Reset()
	p.callRaw.WriteString(it.raw)
	p.args.Reset()
	p.nargs = 0
	p.skipping = p.po.MaxCalls > 0 && index >= p.po.MaxCalls
	p.announced = false
	p.phase = phCall
	return markup(it.raw, evs)
}

// announce emits the call's CallStart before its first arguments or its
// end: a call that fails before writing any argument tag was never
// announced, so a stream shows no call that the answer does not have.
func (p *Parser) announce(evs []Event) []Event {
	if p.announced || p.skipping {
		return evs
	}
	p.announced = true
	return append(evs, Event{Kind: CallStart, Call: len(p.calls), ID: p.call.ID, Name: p.call.Name})
}

func (p *Parser) startArg(it item, evs []Event) []Event {
	key, hasKey := it.get("key")
	typ, _ := it.get("type")
	if it.bad || !hasKey {
		return p.fail(evs, "an argument tag without a key: "+truncate(it.raw, 64), it.raw)
	}
	if _, ok := argTypes[typ]; !ok {
		return p.fail(evs, fmt.Sprintf("argument %q has unknown type %q", key, typ), it.raw)
	}
	var b strings.Builder
	if p.nargs == 0 {
		b.WriteByte('{')
	} else {
		b.WriteByte(',')
	}
	writePyString(&b, key)
	b.WriteByte(':')
	if typ == "string" {
		b.WriteByte('"')
	}
	p.phase, p.argKey, p.argType = phArg, key, typ
	p.value.Reset()
	return p.fragment(b.String(), it.raw, evs)
}

func (p *Parser) endCall(it item, evs []Event) []Event {
	evs = p.announce(evs)
	switch {
	case p.nargs > 0:
		evs = p.fragment("}", it.raw, evs)
	case p.nargs == 0:
		evs = p.fragment("{}", it.raw, evs)
	default:
		evs = p.callMarkup(it.raw, evs)
	}
	c := *p.call
	c.Arguments = p.args.String()
	p.call = nil
	p.phase = phTools
	if p.skipping {
		return evs
	}
	p.calls = append(p.calls, c)
	return append(evs, Event{Kind: CallDone, Call: len(p.calls) - 1})
}

// fragment adds text to the arguments of the call being read.
func (p *Parser) fragment(text, raw string, evs []Event) []Event {
	p.args.WriteString(text)
	p.callRaw.WriteString(raw)
	evs = p.announce(evs)
	if p.skipping {
		return markup(raw, evs)
	}
	return append(evs, Event{Kind: CallArguments, Call: len(p.calls), Text: text, Raw: raw})
}

func (p *Parser) callMarkup(raw string, evs []Event) []Event {
	p.callRaw.WriteString(raw)
	return markup(raw, evs)
}

func describe(it item) string {
	if it.kind == itemText {
		return "text" // its cut depends on the streaming; the text is in the content
	}
	return "tag " + strconv.Quote(truncate(it.raw, 64))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// TokenParser feeds generated token ids through a tokenizer.Decoder into a
// Parser, for callers that stream ids. It knows more than the text: a
// marker counts only where it is the special token, so an argument value
// or an attribute that spells "<|close|>" in ordinary tokens (as the
// renderer writes user text) stays text.
type TokenParser struct {
	t   *tokenizer.Tokenizer
	dec *tokenizer.Decoder
	p   *Parser
}

// NewTokenParser returns a TokenParser for output generated after rendering
// with opts.
func NewTokenParser(t *tokenizer.Tokenizer, opts Options) *TokenParser {
	return NewTokenParserWith(t, opts, ParseOptions{})
}

// NewTokenParserWith is NewTokenParser with call ids and a call limit.
func NewTokenParserWith(t *tokenizer.Tokenizer, opts Options, po ParseOptions) *TokenParser {
	return &TokenParser{t: t, dec: t.NewDecoder(), p: opts.NewParserWith(po)}
}

// Add consumes one generated id.
func (tp *TokenParser) Add(id int) (reasoning, content string) { return texts(tp.Events(id)) }

// Events consumes one generated id and returns the events it completes.
func (tp *TokenParser) Events(id int) []Event {
	text := tp.dec.Add(id)
	if !tp.t.IsSpecial(id) {
		return tp.p.events(text, true)
	}
	// A special token's text, after any bytes the decoder held back from
	// ordinary tokens before it.
	special, _ := tp.t.TokenBytes(id)
	plain, ok := strings.CutSuffix(text, special)
	if !ok {
		return tp.p.events(text, true)
	}
	evs := tp.p.events(plain, true)
	return append(evs, tp.p.events(special, false)...)
}

// Finish flushes the decoder and the parser; see Parser.Finish.
func (tp *TokenParser) Finish(cut bool) (reasoning, content string) {
	return texts(tp.FinishEvents(cut))
}

// FinishEvents flushes the decoder and the parser; see Parser.FinishEvents.
func (tp *TokenParser) FinishEvents(cut bool) []Event {
	evs := tp.p.events(tp.dec.Flush(), true)
	return append(evs, tp.p.FinishEvents(cut)...)
}

// Thinking is Parser.Thinking.
func (tp *TokenParser) Thinking() bool { return tp.p.Thinking() }

// Result is Parser.Result.
func (tp *TokenParser) Result() (reasoning, content string) { return tp.p.Result() }

// Output is Parser.Output.
func (tp *TokenParser) Output() Output { return tp.p.Output() }
