package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/deltafin/deltafin/chat"
	"github.com/deltafin/deltafin/engine"
	"github.com/labstack/echo/v4"
)

// msgOutput renders one Messages request's generated tokens: as one
// message, or as Anthropic's event sequence (message_start; for each
// content block content_block_start, its deltas and content_block_stop;
// message_delta with the stop reason and usage; message_stop; ping events
// while the model works). K3's reasoning is a thinking block, its answer a
// text block, each call a tool_use block whose input streams as
// input_json_delta fragments.
type msgOutput struct {
	r      *msgRequest
	model  string
	id     string
	prompt int               // prompt tokens, for message_start's usage
	parser *chat.TokenParser // decoder, reasoning/content split and tool calls
	sse    *sseWriter
	stop   stopText
	tokens []int

	// The stream's open block: its index and type ("" for none), the next
	// index, and an open thinking block's text, for its signature.
	open     int
	openType string
	next     int
	thinking strings.Builder
	closed   bool // the heartbeat is stopped
}

// pingEvent is Anthropic's keep-alive, sent while the model works.
const pingEvent = "event: ping\ndata: {\"type\":\"ping\"}\n\n"

func (o *msgOutput) streaming() bool  { return o.r.g.stream }
func (o *msgOutput) started() bool    { return o.sse != nil }
func (o *msgOutput) emitted() []int   { return o.tokens }
func (o *msgOutput) answerID() string { return o.id }
func (o *msgOutput) gone() bool       { return o.sse != nil && o.sse.failed() }
func (o *msgOutput) inThink() bool    { return o.parser.Thinking() }

func (o *msgOutput) close() {
	if o.sse != nil && !o.closed {
		o.closed = true
		o.sse.close()
	}
}

// begin sends message_start and a first ping, as Anthropic does, so the
// client sees the message before a long prefill ends.
func (o *msgOutput) begin(w http.ResponseWriter, heartbeat time.Duration) error {
	o.sse = startSSEBeat(w, heartbeat, pingEvent)
	start := o.message(nil, nil, nil, MessageUsage{InputTokens: o.prompt})
	if err := o.sse.named("message_start", map[string]any{"type": "message_start", "message": start}); err != nil {
		return err
	}
	return o.sse.write([]byte(pingEvent))
}

// message is the message object with the given content and stop.
func (o *msgOutput) message(content []ResponseBlock, stopReason, stopSeq *string, u MessageUsage) Message {
	if content == nil {
		content = []ResponseBlock{}
	}
	return Message{ID: o.id, Type: "message", Role: "assistant", Model: o.model, Content: content,
		StopReason: stopReason, StopSequence: stopSeq, Usage: u}
}

func (o *msgOutput) token(id int) error {
	o.tokens = append(o.tokens, id)
	err := o.send(o.stop.events(o.parser.Events(id), false))
	if err == nil && o.stop.hit {
		err = engine.ErrStopped
	}
	return err
}

// send streams the parser's events as block events.
func (o *msgOutput) send(evs []chat.Event) error {
	if o.sse == nil {
		return nil // the parser keeps the whole answer itself
	}
	for _, e := range evs {
		var err error
		switch e.Kind {
		case chat.Reasoning:
			if err = o.ensure("thinking", ResponseBlock{Type: "thinking", Thinking: ptr(""), Signature: ptr("")}); err == nil {
				o.thinking.WriteString(e.Text)
				if !o.r.omitThinking && e.Text != "" {
					err = o.delta(map[string]any{"type": "thinking_delta", "thinking": e.Text})
				}
			}
		case chat.Content:
			if e.Text == "" {
				continue
			}
			if err = o.ensure("text", ResponseBlock{Type: "text", Text: ptr("")}); err == nil {
				err = o.delta(map[string]any{"type": "text_delta", "text": e.Text})
			}
		case chat.CallStart:
			if err = o.closeBlock(); err == nil {
				err = o.startBlock("tool_use", ResponseBlock{Type: "tool_use", ID: e.ID, Name: e.Name, Input: json.RawMessage(`{}`)})
			}
		case chat.CallArguments:
			if o.openType == "tool_use" && e.Text != "" {
				err = o.delta(map[string]any{"type": "input_json_delta", "partial_json": e.Text})
			}
		case chat.CallDone, chat.CallFailed:
			// A failed call's raw text follows as content.
			err = o.closeBlock()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// ensure opens a block of type typ unless one is open.
func (o *msgOutput) ensure(typ string, start ResponseBlock) error {
	if o.openType == typ {
		return nil
	}
	if err := o.closeBlock(); err != nil {
		return err
	}
	return o.startBlock(typ, start)
}

func (o *msgOutput) startBlock(typ string, start ResponseBlock) error {
	o.open, o.openType = o.next, typ
	o.next++
	o.thinking.Reset()
	return o.sse.named("content_block_start", map[string]any{"type": "content_block_start", "index": o.open, "content_block": start})
}

func (o *msgOutput) delta(d map[string]any) error {
	return o.sse.named("content_block_delta", map[string]any{"type": "content_block_delta", "index": o.open, "delta": d})
}

// closeBlock ends the open block; a thinking block gets its signature
// first.
func (o *msgOutput) closeBlock() error {
	if o.openType == "" {
		return nil
	}
	if o.openType == "thinking" {
		if err := o.delta(map[string]any{"type": "signature_delta", "signature": thinkingSignature(o.thinking.String())}); err != nil {
			return err
		}
	}
	o.openType = ""
	return o.sse.named("content_block_stop", map[string]any{"type": "content_block_stop", "index": o.open})
}

// final is the whole answer, cut at a stop sequence as chat's is.
func (o *msgOutput) final() chat.Output {
	out := o.parser.Output()
	if len(o.stop.stops) == 0 {
		return out
	}
	out.Content = o.stop.cut(out.Content)
	if o.stop.hit {
		out.Calls = out.Calls[:min(o.stop.callsSent, len(out.Calls))]
	}
	return out
}

// stopOf is the stop_reason, stop_sequence and output error of an answer
// the engine ended with finish.
func (o *msgOutput) stopOf(finish string, out chat.Output) (reason string, seq *string, oe *OutputError) {
	if o.stop.hit {
		content := o.parser.Output().Content
		at := firstStop(content, o.stop.stops)
		for _, s := range o.stop.stops {
			if at >= 0 && strings.HasPrefix(content[at:], s) {
				seq = &s
				break
			}
		}
		return "stop_sequence", seq, nil
	}
	finish, oe = o.r.g.finishOf(finish, out)
	switch finish {
	case "length":
		return "max_tokens", nil, oe
	case "tool_calls":
		return "tool_use", nil, nil
	}
	return "end_turn", nil, oe
}

// blocks is the non-streamed content: thinking, text, then the calls.
func (o *msgOutput) blocks(out chat.Output) []ResponseBlock {
	var bs []ResponseBlock
	if o.r.g.thinking && out.Reasoning != "" {
		text := out.Reasoning
		if o.r.omitThinking {
			text = ""
		}
		bs = append(bs, ResponseBlock{Type: "thinking", Thinking: &text, Signature: ptr(thinkingSignature(out.Reasoning))})
	}
	if out.Content != "" {
		bs = append(bs, ResponseBlock{Type: "text", Text: ptr(out.Content)})
	}
	for _, c := range out.Calls {
		input := json.RawMessage(c.Arguments)
		if kindOf(input) != '{' || !json.Valid(input) {
			// A json block that is not an object: Anthropic's input is
			// one, so the text travels as a string field.
			input, _ = json.Marshal(map[string]string{"arguments": c.Arguments})
		}
		bs = append(bs, ResponseBlock{Type: "tool_use", ID: c.ID, Name: c.Name, Input: input})
	}
	return bs
}

// end flushes what the parser and the stop sequences hold back and
// finishes the answer: the message, or the last block's stop,
// message_delta and message_stop.
func (o *msgOutput) end(c echo.Context, finish string, promptTokens int) error {
	if err := o.send(o.stop.events(o.parser.FinishEvents(finish == "length" && !o.stop.hit), true)); err != nil {
		return err
	}
	out := o.final()
	reason, seq, oe := o.stopOf(finish, out)
	u := MessageUsage{InputTokens: promptTokens, OutputTokens: len(o.tokens)}
	if o.sse == nil {
		m := o.message(o.blocks(out), &reason, seq, u)
		m.OutputError = oe
		return c.JSON(http.StatusOK, m)
	}
	if err := o.closeBlock(); err != nil {
		return err
	}
	o.close() // no ping after message_stop
	md := map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": reason, "stop_sequence": seq}, "usage": u}
	if oe != nil {
		md["output_error"] = oe
	}
	if err := o.sse.named("message_delta", md); err != nil {
		return err
	}
	return o.sse.named("message_stop", map[string]any{"type": "message_stop"})
}

// fail ends a started stream with an error event, as Anthropic's do.
func (o *msgOutput) fail(e *apiError) error {
	return o.sse.named("error", e.anthropicBody())
}

func ptr[T any](v T) *T { return &v }
