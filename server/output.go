package server

import (
	"net/http"
	"strings"
	"time"

	"github.com/deltafin/deltafin/chat"
	"github.com/deltafin/deltafin/engine"
	"github.com/deltafin/deltafin/tokenizer"
	"github.com/labstack/echo/v4"
)

// output renders one request's generated tokens: as one JSON answer, or as
// server-sent events in OpenAI's chunk format. Token ids become text through
// a streaming decoder (a token may end inside a UTF-8 character), and chat
// text is split into reasoning and content as it arrives.
type output struct {
	g       *genRequest
	model   string
	id      string
	created int64
	dec     *tokenizer.Decoder // completions
	parser  *chat.TokenParser  // chat: decoder, reasoning/content split and tool calls
	sse     *sseWriter         // streaming only, after begin
	stop    stopText           // the request's stop sequences, on the content
	seed    int64              // reported with the answer (sampling.go)

	text   strings.Builder // the non-streamed completion
	tokens []int           // every emitted token, for the memo
}

// begin starts the event stream; the first chunk carries the role, as
// OpenAI's does, so the client sees an answer before a long prefill ends.
func (o *output) begin(w http.ResponseWriter, heartbeat time.Duration) error {
	o.sse = startSSE(w, heartbeat)
	if !o.g.chat {
		return nil
	}
	empty := ""
	return o.sse.event(chatChunk(o.id, o.created, o.model, ChatDelta{Role: "assistant", Content: &empty}, nil, o.g.includeUsage))
}

func (o *output) streaming() bool  { return o.g.stream }
func (o *output) started() bool    { return o.sse != nil }
func (o *output) emitted() []int   { return o.tokens }
func (o *output) answerID() string { return o.id }
func (o *output) inThink() bool    { return o.parser != nil && o.parser.Thinking() }

// gone reports whether the stream's client has vanished.
func (o *output) gone() bool {
	return o.sse != nil && o.sse.failed()
}

// close stops the heartbeat of a stream.
func (o *output) close() {
	if o.sse != nil {
		o.sse.close()
	}
}

// token takes one generated token; engine.ErrStopped says a stop
// sequence ended the answer.
func (o *output) token(id int) error {
	o.tokens = append(o.tokens, id)
	var err error
	if o.parser != nil {
		err = o.sendChat(o.stop.events(o.parser.Events(id), false))
	} else {
		text, _ := o.stop.push(o.dec.Add(id))
		err = o.send(text)
	}
	if err == nil && o.stop.hit {
		err = engine.ErrStopped
	}
	return err
}

// send delivers completion text.
func (o *output) send(text string) error {
	if o.sse == nil {
		o.text.WriteString(text)
		return nil
	}
	if text == "" {
		return nil
	}
	return o.sse.event(completion(o.id, o.created, o.model, text, nil, nil, o.g.includeUsage))
}

// sendChat streams the chat parser's events as deltas, in their order:
// reasoning, content, tool calls (tools.go).
func (o *output) sendChat(evs []chat.Event) error {
	if o.sse == nil {
		return nil // the chat parser keeps the whole answer itself
	}
	for _, d := range deltas(evs) {
		if err := o.sse.event(chatChunk(o.id, o.created, o.model, d, nil, o.g.includeUsage)); err != nil {
			return err
		}
	}
	return nil
}

// stopFinish is the finish reason after a stop sequence: "stop", as at the
// end of a turn.
func (o *output) stopFinish(finish string) string {
	if o.stop.hit {
		return "stop"
	}
	return finish
}

// chatOutput is the whole chat answer, cut at a stop sequence: its content
// ends before the stop, and only the calls completed before it count.
func (o *output) chatOutput() chat.Output {
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

// end flushes what the decoder and splitter hold back and finishes the
// answer: the JSON body, or the final chunk, the usage chunk and [DONE].
func (o *output) end(c echo.Context, finish string, promptTokens int) error {
	var err error
	var oe *OutputError
	if o.parser != nil {
		err = o.sendChat(o.stop.events(o.parser.FinishEvents(finish == "length" && !o.stop.hit), true))
		finish, oe = o.g.finishOf(o.stopFinish(finish), o.chatOutput())
	} else {
		text, hit := o.stop.push(o.dec.Flush())
		if !hit {
			text += o.stop.flush()
		}
		err = o.send(text)
		finish = o.stopFinish(finish)
	}
	if err != nil {
		return err
	}
	u := usage(promptTokens, len(o.tokens))
	if o.sse == nil {
		if o.g.chat {
			cc := chatCompletion(o.id, o.created, o.model, o.chatOutput(), o.g.thinking, finish, oe, u)
			cc.Seed = &o.seed
			return c.JSON(http.StatusOK, cc)
		}
		cp := completion(o.id, o.created, o.model, o.text.String(), &finish, &u, false)
		cp.Seed = &o.seed
		return c.JSON(http.StatusOK, cp)
	}
	var last, usageChunk any
	if o.g.chat {
		ch := chatChunk(o.id, o.created, o.model, ChatDelta{}, &finish, o.g.includeUsage)
		ch.Choices[0].OutputError = oe
		ch.Seed = &o.seed
		last = ch
		usageChunk = chatUsageChunk(o.id, o.created, o.model, u)
	} else {
		cp := completion(o.id, o.created, o.model, "", &finish, nil, o.g.includeUsage)
		cp.Seed = &o.seed
		last = cp
		usageChunk = completionUsageChunk(o.id, o.created, o.model, u)
	}
	if err := o.sse.event(last); err != nil {
		return err
	}
	if o.g.includeUsage {
		if err := o.sse.event(usageChunk); err != nil {
			return err
		}
	}
	return o.sse.finish()
}

// fail reports an error that happened after a stream started: the status
// line is gone, so the error travels as an event (OpenAI's SDKs raise it).
func (o *output) fail(e *apiError) error {
	if err := o.sse.event(e.body()); err != nil {
		return err
	}
	return o.sse.finish()
}
