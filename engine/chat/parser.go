package chat

import (
	"strings"

	"github.com/deltafin/deltafin/engine/tokenizer"
)

// The markers the parser acts on. A thinking-mode completion is
//
//	{reasoning}<|close|>think<|sep|><|open|>response<|sep|>{content}<|close|>response<|sep|><|close|>message<|sep|>
//
// followed by the stop token; a non-thinking one starts at {content}.
const (
	markThinkEnd    = Close + "think" + Sep
	markResponse    = Open + "response" + Sep
	markResponseEnd = Close + "response" + Sep
	markMessageEnd  = Close + "message" + Sep
	maxMarkerLen    = len(markResponseEnd)
)

// The parser's phases: in the think channel, in the response, after it.
const (
	phaseReasoning = iota
	phaseContent
	phaseDone
)

// Parser splits generated text into reasoning_content and content as it
// streams. It holds back only text that could be the start of a marker, so a
// marker split across Add calls (as text, or as the special tokens and tag
// words it decodes from) is still recognised.
//
// Text before <|open|>response<|sep|> is reasoning (a trailing
// <|close|>think<|sep|> dropped); text after it is content, up to
// <|close|>response<|sep|>, <|close|>message<|sep|> or <|end_of_msg|>;
// anything after those (a tool-call block, which Deltafin does not parse)
// is dropped. While streaming, text before the answer marker is reported as
// reasoning. At Finish, output that was cut by the length limit stays
// reasoning, while a turn that ended on its own without any marker at all
// was a plain answer, so Result reports it as content. A Parser is not safe
// for concurrent use.
type Parser struct {
	phase     int
	buf       string
	sawMarker bool
	cut       bool
	finished  bool
	reasoning strings.Builder
	content   strings.Builder
}

// NewParser returns a Parser for the output of a thinking-mode prompt, which
// ends inside the think channel.
func NewParser() *Parser { return &Parser{} }

// NewParser returns a Parser for output generated after rendering with o:
// starting in the think channel when o.Thinking, else in the response.
func (o Options) NewParser() *Parser {
	if o.Thinking {
		return &Parser{}
	}
	return &Parser{phase: phaseContent}
}

// markers lists what ends or switches the current phase.
func (p *Parser) markers() []string {
	if p.phase == phaseReasoning {
		return []string{markResponse, markThinkEnd, markResponseEnd, markMessageEnd, EndOfMsg}
	}
	return []string{markResponseEnd, markMessageEnd, EndOfMsg, markResponse}
}

// Add consumes the next piece of generated text and returns the reasoning
// and content it completes.
func (p *Parser) Add(text string) (reasoning, content string) {
	if p.finished || p.phase == phaseDone {
		return "", ""
	}
	p.buf += text
	var r, c strings.Builder
	for p.phase != phaseDone {
		at, mark := -1, ""
		for _, m := range p.markers() {
			if i := strings.Index(p.buf, m); i >= 0 && (at < 0 || i < at) {
				at, mark = i, m
			}
		}
		if at < 0 {
			keep := heldBack(p.buf)
			p.emit(&r, &c, p.buf[:len(p.buf)-keep])
			p.buf = p.buf[len(p.buf)-keep:]
			break
		}
		p.emit(&r, &c, p.buf[:at])
		p.buf = p.buf[at+len(mark):]
		p.sawMarker = true
		switch mark {
		case markResponse:
			p.phase = phaseContent
		case markThinkEnd:
			// dropped; the response marker follows
		default:
			p.phase = phaseDone
		}
	}
	if p.phase == phaseDone {
		p.buf = ""
	}
	return r.String(), c.String()
}

func (p *Parser) emit(r, c *strings.Builder, s string) {
	if s == "" {
		return
	}
	if p.phase == phaseReasoning {
		r.WriteString(s)
		p.reasoning.WriteString(s)
	} else {
		c.WriteString(s)
		p.content.WriteString(s)
	}
}

// heldBack returns the length of the longest suffix of s that is a proper
// prefix of some marker.
func heldBack(s string) int {
	from := max(0, len(s)-maxMarkerLen)
	for i := from; i < len(s); i++ {
		if s[i] != '<' {
			continue
		}
		tail := s[i:]
		for _, m := range []string{markResponse, markThinkEnd, markResponseEnd, markMessageEnd, EndOfMsg} {
			if len(tail) < len(m) && strings.HasPrefix(m, tail) {
				return len(s) - i
			}
		}
	}
	return 0
}

// Finish flushes held-back text (an unfinished marker is text) and returns
// it as the last reasoning or content delta. cut says generation stopped at
// the length limit (or was interrupted) rather than at a stop token.
func (p *Parser) Finish(cut bool) (reasoning, content string) {
	if p.finished {
		return "", ""
	}
	var r, c strings.Builder
	if p.phase != phaseDone {
		p.emit(&r, &c, p.buf)
	}
	p.buf = ""
	p.finished, p.cut = true, cut
	return r.String(), c.String()
}

// Result returns the whole reasoning_content and content so far; after
// Finish it applies the rule that a complete turn without any marker is
// content.
func (p *Parser) Result() (reasoning, content string) {
	if p.finished && !p.cut && !p.sawMarker && p.phase == phaseReasoning {
		return "", p.reasoning.String()
	}
	return p.reasoning.String(), p.content.String()
}

// TokenParser feeds generated token ids through a tokenizer.Decoder into a
// Parser, for callers that stream ids.
type TokenParser struct {
	dec *tokenizer.Decoder
	p   *Parser
}

// NewTokenParser returns a TokenParser for output generated after rendering
// with opts.
func NewTokenParser(t *tokenizer.Tokenizer, opts Options) *TokenParser {
	return &TokenParser{dec: t.NewDecoder(), p: opts.NewParser()}
}

// Add consumes one generated id.
func (tp *TokenParser) Add(id int) (reasoning, content string) { return tp.p.Add(tp.dec.Add(id)) }

// Finish flushes the decoder and the parser; see Parser.Finish.
func (tp *TokenParser) Finish(cut bool) (reasoning, content string) {
	r1, c1 := tp.p.Add(tp.dec.Flush())
	r2, c2 := tp.p.Finish(cut)
	return r1 + r2, c1 + c2
}

// Result is Parser.Result.
func (tp *TokenParser) Result() (reasoning, content string) { return tp.p.Result() }
