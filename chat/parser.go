package chat

import (
	"errors"
	"fmt"
	"strings"
)

// A thinking-mode completion is
//
//	{reasoning}<|close|>think<|sep|><|open|>response<|sep|>{content}<|close|>response<|sep|>
//	[<|open|>tools<|sep|>{calls}<|close|>tools<|sep|>]<|close|>message<|sep|>
//
// followed by the stop token; a non-thinking one starts at {content}. Each
// call is <|open|>call tool="f" index="i"<|sep|>{arguments}<|close|>call<|sep|>,
// the arguments either typed blocks
// <|open|>argument key="k" type="string|number|boolean|null|object|array"<|sep|>v<|close|>argument<|sep|>
// or one raw <|open|>json type="object"<|sep|>text<|close|>json<|sep|>.

// ErrToolCall is wrapped by Output.Err when a tools block does not parse:
// cut off, an unknown tag, a value that is not of its declared type.
var ErrToolCall = errors.New("chat: malformed tool call")

// EventKind says what an Event carries.
type EventKind uint8

const (
	// Markup is structural text with no meaning for the client (markers,
	// tag headers, a value still being read); only Raw is set.
	Markup EventKind = iota
	// Reasoning is think-channel text (Text).
	Reasoning
	// Content is answer text (Text). After a malformed tools block it is
	// the block's raw text.
	Content
	// CallStart opens tool call Call (from 0) with its ID and Name; its
	// arguments follow as CallArguments fragments. It comes with the
	// call's first argument tag (or its end), so a call whose body is not
	// XTML at all is never started.
	CallStart
	// CallArguments is the next fragment (Text) of call Call's arguments,
	// a JSON text as OpenAI sends it. The fragments of a call concatenate
	// to its Arguments.
	CallArguments
	// CallDone ends call Call: its arguments are complete.
	CallDone
	// CallFailed voids call Call, started but then not parsed (Text says
	// why); its raw text follows as Content.
	CallFailed
)

// Event is one step of the parse, as Parser.Events returns them.
type Event struct {
	Kind EventKind
	Text string
	Call int    // call events: the call's index, from 0
	ID   string // CallStart
	Name string // CallStart
	// Raw is the generated text this event accounts for: the Raw of all
	// events, in order, is exactly the text parsed.
	Raw string
}

// Call is one parsed tool call.
type Call struct {
	ID        string
	Name      string
	Arguments string // JSON text: the typed arguments as an object, or a json block's text
}

// Output is a whole parse.
type Output struct {
	Reasoning string
	Content   string
	Calls     []Call // complete calls, in order
	// Err is non-nil (wrapping ErrToolCall) when a tools block did not
	// parse; the failed part's raw text is at the end of Content.
	Err error
}

// ParseOptions set how tool calls are reported.
type ParseOptions struct {
	// ResponseID seeds the call ids: call i gets CallID(ResponseID, i).
	ResponseID string
	// MaxCalls > 0 keeps only the first MaxCalls calls (1 for OpenAI's
	// parallel_tool_calls: false); later ones are Markup.
	MaxCalls int
}

// The parser's phases.
const (
	phReasoning     = iota
	phContent       // in the response
	phAfterResponse // after <|close|>response<|sep|>
	phTools         // in the tools block, between calls
	phCall          // in a call, between arguments
	phArg           // in an argument's value
	phJSON          // in a call's json block
	phAfterJSON     // after the json block, before the call's close
	phAfterTools    // after <|close|>tools<|sep|>
	phDone          // after the message's end: anything more is content
	phRaw           // after a malformed block: everything is content
)

// Parser splits generated text into reasoning, content and tool calls as it
// streams. It holds back only text that could still become a tag, so a
// marker split across calls (as text, or as the special tokens and tag
// words it decodes from) is still recognised.
//
// Text before <|open|>response<|sep|> is reasoning (<|close|>think<|sep|>
// dropped); text after it is content up to <|close|>response<|sep|>; then a
// tools block gives tool calls. Tags that mean nothing where they stand are
// text. A tools block that does not parse gives its raw text as content and
// sets Output.Err; nothing generated is lost. At the end, output cut by the
// length limit inside the think channel stays reasoning, while a turn that
// ended on its own without any marker at all was a plain answer, so Result
// reports it as content. A Parser is not safe for concurrent use.
type Parser struct {
	po        ParseOptions
	sc        scanner
	phase     int
	sawMarker bool
	thought   bool // <|close|>think was read
	finished  bool
	cut       bool

	reasoning strings.Builder
	content   strings.Builder
	calls     []Call
	err       error

	// The call being read.
	call      *Call
	callRaw   strings.Builder // its raw text so far, for content if it fails
	gap       strings.Builder // blank text between calls, likewise
	args      strings.Builder // its arguments so far
	nargs     int
	argKey    string
	argType   string
	value     strings.Builder // a non-string argument's value text
	skipping  bool            // the current call is beyond MaxCalls
	announced bool            // its CallStart was emitted
}

// NewParser returns a Parser for the output of a thinking-mode prompt, which
// ends inside the think channel.
func NewParser() *Parser { return DefaultOptions().NewParser() }

// NewParser returns a Parser for output generated after rendering with o.
func (o Options) NewParser() *Parser { return o.NewParserWith(ParseOptions{}) }

// NewParserWith returns a Parser for output generated after rendering with
// o: starting in the think channel when o.Thinking, in the response
// otherwise, and inside the tools block (or the named call) when o forces a
// tool call.
func (o Options) NewParserWith(po ParseOptions) *Parser {
	p := &Parser{po: po}
	switch {
	case o.forced() && o.ToolName != "":
		// The prompt ends with the call's tag.
		p.startCall(item{kind: itemOpen, name: "call", attrs: []attr{{"tool", o.ToolName}, {"index", "1"}}}, nil)
		p.sawMarker = true
	case o.forced():
		p.phase = phTools
		p.sawMarker = true
	case !o.Thinking:
		p.phase = phContent
	}
	return p
}

// Thinking reports whether the text parsed so far is still in the think
// channel: no end-of-thinking marker (<|close|>think) nor anything after
// it yet. The server counts a job's thinking tokens by it.
func (p *Parser) Thinking() bool { return p.phase == phReasoning && !p.thought }

// Add consumes the next piece of generated text and returns the reasoning
// and content it completes (tool calls go to Output).
func (p *Parser) Add(text string) (reasoning, content string) { return texts(p.Events(text)) }

// Finish flushes held-back text and returns it as the last reasoning or
// content; see FinishEvents.
func (p *Parser) Finish(cut bool) (reasoning, content string) { return texts(p.FinishEvents(cut)) }

func texts(evs []Event) (reasoning, content string) {
	var r, c strings.Builder
	for _, e := range evs {
		switch e.Kind {
		case Reasoning:
			r.WriteString(e.Text)
		case Content:
			c.WriteString(e.Text)
		}
	}
	return r.String(), c.String()
}

// Events consumes the next piece of generated text and returns the events it
// completes.
func (p *Parser) Events(text string) []Event { return p.events(text, false) }

// events consumes text; literal says it came from ordinary tokens, which
// start no marker.
func (p *Parser) events(text string, literal bool) []Event {
	if p.finished {
		return nil
	}
	return p.run(p.sc.add(text, literal, nil), nil)
}

// FinishEvents flushes held-back text (an unfinished tag is text) and ends
// the parse. cut says generation stopped at the length limit (or was
// interrupted) rather than at a stop token. A call left open either way
// fails, and so does a tag cut in half inside a tools block; calls that
// were complete stay.
func (p *Parser) FinishEvents(cut bool) []Event {
	if p.finished {
		return nil
	}
	items := p.sc.flush(nil)
	var evs []Event
	if cut && p.inTools() {
		// A tag cut in half, or the rest of a call, is where the
		// length limit struck.
		var rest strings.Builder
		for _, it := range items {
			rest.WriteString(it.raw)
		}
		if p.call != nil || rest.Len() > 0 {
			evs = p.fail(evs, "the tools block was cut off by the length limit", rest.String())
		}
	} else {
		evs = p.run(items, evs)
		if p.call != nil {
			evs = p.fail(evs, "the message ended inside the call", "")
		}
	}
	p.finished, p.cut = true, cut
	return evs
}

// inTools reports whether the parse is inside a tools block.
func (p *Parser) inTools() bool {
	switch p.phase {
	case phTools, phCall, phArg, phJSON, phAfterJSON:
		return true
	}
	return false
}

// Result returns the whole reasoning_content and content so far; after
// Finish it applies the rule that a complete turn without any marker is
// content.
func (p *Parser) Result() (reasoning, content string) {
	if p.finished && !p.cut && !p.sawMarker && p.phase == phReasoning {
		return "", p.reasoning.String()
	}
	return p.reasoning.String(), p.content.String()
}

// Output returns the whole parse so far (see Result for the split).
func (p *Parser) Output() Output {
	r, c := p.Result()
	return Output{Reasoning: r, Content: c, Calls: append([]Call(nil), p.calls...), Err: p.err}
}

func (p *Parser) run(items []item, evs []Event) []Event {
	for _, it := range items {
		evs = p.step(it, evs)
	}
	return evs
}

func (p *Parser) text(kind EventKind, text, raw string, evs []Event) []Event {
	if text == "" && raw == "" {
		return evs
	}
	switch kind {
	case Reasoning:
		p.reasoning.WriteString(text)
	case Content:
		p.content.WriteString(text)
	}
	return append(evs, Event{Kind: kind, Text: text, Raw: raw})
}

func markup(raw string, evs []Event) []Event {
	if raw == "" {
		return evs
	}
	return append(evs, Event{Kind: Markup, Raw: raw})
}

// step advances the parse by one item.
func (p *Parser) step(it item, evs []Event) []Event {
	switch p.phase {
	case phReasoning, phContent:
		kind := Reasoning
		if p.phase == phContent {
			kind = Content
		}
		switch {
		case it.kind == itemText:
			return p.text(kind, it.raw, it.raw, evs)
		case p.phase == phReasoning && it.is(itemOpen, "response"):
			p.phase = phContent
		case p.phase == phReasoning && it.is(itemClose, "think"):
			p.thought = true
		case it.is(itemClose, "response"):
			p.phase = phAfterResponse
		case it.is(itemOpen, "tools"):
			p.phase = phTools
		case it.is(itemClose, "message"), it.kind == itemEnd:
			p.phase = phDone
		default:
			return p.text(kind, it.raw, it.raw, evs)
		}
		p.sawMarker = true
		return markup(it.raw, evs)
	case phAfterResponse, phAfterTools:
		switch {
		case p.phase == phAfterResponse && it.is(itemOpen, "tools"):
			p.phase = phTools
		case it.is(itemClose, "message"), it.kind == itemEnd:
			p.phase = phDone
		default:
			return p.text(Content, it.raw, it.raw, evs)
		}
		return markup(it.raw, evs)
	case phDone, phRaw:
		return p.text(Content, it.raw, it.raw, evs)
	}
	return p.stepTools(it, evs)
}

// blank reports whether it is text of only whitespace, which may stand
// between the tags of a tools block.
func blank(it item) bool {
	return it.kind == itemText && strings.TrimFunc(it.raw, pySpace) == ""
}

// fail voids the call being read (if any): its raw text so far and raw
// become content, and so does everything after.
func (p *Parser) fail(evs []Event, why, raw string) []Event {
	text := p.gap.String() + raw // the blank before raw between calls
	if p.call != nil {
		text = p.callRaw.String() + raw
		if p.announced {
			evs = append(evs, Event{Kind: CallFailed, Call: len(p.calls), Text: why})
		}
		why = "call " + p.call.Name + ": " + why
	}
	if p.err == nil {
		p.err = fmt.Errorf("%w: %s", ErrToolCall, why)
	}
	p.call = nil
	p.phase = phRaw
	return p.text(Content, text, raw, evs)
}
