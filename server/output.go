package server

import (
	"net/http"
	"strings"
	"time"

	"github.com/deltafin/deltafin/engine"
	"github.com/deltafin/deltafin/engine/chat"
	"github.com/deltafin/deltafin/engine/tokenizer"
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
	parser  *chat.TokenParser  // chat: decoder and reasoning/content split
	sse     *sseWriter         // streaming only, after begin
	stop    stopText           // the request's stop sequences, on the content

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
	var reasoning, content string
	if o.parser != nil {
		reasoning, content = o.parser.Add(id)
	} else {
		content = o.dec.Add(id)
	}
	content, hit := o.stop.push(content)
	if err := o.send(reasoning, content); err != nil {
		return err
	}
	if hit {
		return engine.ErrStopped
	}
	return nil
}

// send delivers reasoning then content, in that order.
func (o *output) send(reasoning, content string) error {
	if o.sse == nil {
		if o.parser == nil {
			o.text.WriteString(content)
		}
		return nil // the chat parser keeps the whole answer itself
	}
	if !o.g.chat {
		if content == "" {
			return nil
		}
		return o.sse.event(completion(o.id, o.created, o.model, content, nil, nil, o.g.includeUsage))
	}
	if reasoning != "" {
		if err := o.sse.event(chatChunk(o.id, o.created, o.model, ChatDelta{ReasoningContent: &reasoning}, nil, o.g.includeUsage)); err != nil {
			return err
		}
	}
	if content != "" {
		return o.sse.event(chatChunk(o.id, o.created, o.model, ChatDelta{Content: &content}, nil, o.g.includeUsage))
	}
	return nil
}

// end flushes what the decoder and splitter hold back and finishes the
// answer: the JSON body, or the final chunk, the usage chunk and [DONE].
func (o *output) end(c echo.Context, finish string, promptTokens int) error {
	var reasoning, content string
	if o.stop.hit {
		finish = "stop"
	}
	if o.parser != nil {
		reasoning, content = o.parser.Finish(finish == "length")
	} else {
		content = o.dec.Flush()
	}
	if !o.stop.hit {
		var hit bool
		if content, hit = o.stop.push(content); hit {
			finish = "stop"
		} else {
			content += o.stop.flush()
		}
	} else {
		content = ""
	}
	if err := o.send(reasoning, content); err != nil {
		return err
	}
	u := usage(promptTokens, len(o.tokens))
	if o.sse == nil {
		if o.g.chat {
			reasoning, content := o.parser.Result()
			content = o.stop.cut(content)
			return c.JSON(http.StatusOK, chatCompletion(o.id, o.created, o.model, reasoning, content, o.g.thinking, finish, u))
		}
		return c.JSON(http.StatusOK, completion(o.id, o.created, o.model, o.text.String(), &finish, &u, false))
	}
	var last, usageChunk any
	if o.g.chat {
		last = chatChunk(o.id, o.created, o.model, ChatDelta{}, &finish, o.g.includeUsage)
		usageChunk = chatUsageChunk(o.id, o.created, o.model, u)
	} else {
		last = completion(o.id, o.created, o.model, "", &finish, nil, o.g.includeUsage)
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
