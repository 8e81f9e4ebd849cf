package server

import (
	"fmt"
	"net/http"
	"time"

	"github.com/deltafin/deltafin/engine"
	"github.com/deltafin/deltafin/engine/chat"
	"github.com/deltafin/deltafin/engine/tokenizer"
	"github.com/labstack/echo/v4"
)

// Model is what the server needs of an *engine.Model: its description and
// fresh sessions.
type Model interface {
	Info() engine.Info
	NewSession() *engine.Session
}

// New returns a Server for m, whose text goes through tok.
func New(opts Options, m Model, tok *tokenizer.Tokenizer) (*Server, error) {
	info := m.Info()
	if info.ID == "" || info.VocabSize <= 0 || info.ContextLen <= 0 {
		return nil, fmt.Errorf("server: model info incomplete: %+v", info)
	}
	if tok.VocabSize() > info.VocabSize {
		return nil, fmt.Errorf("server: tokenizer has %d tokens, the model only %d", tok.VocabSize(), info.VocabSize)
	}
	meta := modelMeta{id: info.ID, vocabSize: info.VocabSize, contextLen: info.ContextLen, created: time.Now().Unix()}
	s, err := newServer(opts, meta)
	if err != nil {
		return nil, err
	}
	s.model, s.tok, s.chatStop = m, tok, chat.StopTokens(tok)
	return s, nil
}

// job is the engine input of one request.
type job struct {
	prompt []int
	maxNew int
	stop   []int // nil for a raw completion, which runs to maxNew
	key    memoKey
}

// plan tokenizes the request and settles its token limit.
func (s *Server) plan(g *genRequest) (*job, *apiError) {
	j := &job{}
	param := "prompt"
	switch {
	case g.chat:
		param = "messages"
		segs, err := chat.Render(chatMessages(g.messages), chatOptions(g))
		if err != nil {
			return nil, invalid(codeInvalidValue, "messages", "%v", err)
		}
		j.prompt = chat.Tokenize(s.tok, segs)
		j.stop = s.chatStop
	case g.promptIDs != nil:
		j.prompt = g.promptIDs
	default:
		j.prompt = s.tok.Encode(g.prompt)
	}
	room := s.meta.contextLen - len(j.prompt)
	if room < 1 {
		return nil, invalid("context_length_exceeded", param, "the prompt is %d tokens; the model's context holds %d", len(j.prompt), s.meta.contextLen)
	}
	j.maxNew = g.maxTokens
	if s.opts.MaxTokens > 0 && (j.maxNew == 0 || j.maxNew > s.opts.MaxTokens) {
		j.maxNew = s.opts.MaxTokens
	}
	if j.maxNew == 0 || j.maxNew > room {
		j.maxNew = room
	}
	j.key = keyOf(j.prompt, j.maxNew, j.stop)
	return j, nil
}

func (s *Server) chatCompletions(c echo.Context) error {
	return s.handle(c, decodeChat, "chatcmpl-")
}

func (s *Server) completions(c echo.Context) error {
	return s.handle(c, decodeCompletion, "cmpl-")
}

// handle is both generation endpoints: validate, plan, then answer from the
// memo or take a turn at the engine.
func (s *Server) handle(c echo.Context, decode func([]byte, limits) (*genRequest, *apiError), idPrefix string) error {
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	g, ae := decode(body, limits{modelID: s.meta.id, vocabSize: s.meta.vocabSize})
	if ae != nil {
		return ae
	}
	j, ae := s.plan(g)
	if ae != nil {
		return ae
	}
	o := &output{g: g, model: s.meta.id, id: newID(idPrefix), created: time.Now().Unix()}
	if g.chat {
		o.parser = chat.NewTokenParserWith(s.tok, chatOptions(g), g.parseOptions(o.id))
	} else {
		o.dec = s.tok.NewDecoder()
	}
	defer o.close()

	if v, ok := s.memo.get(j.key); ok {
		return s.replay(c, o, j, v)
	}
	t, err := s.gate.enter()
	if err != nil {
		return &apiError{status: http.StatusTooManyRequests, kind: ErrBusy, typ: "rate_limit_error",
			code: "engine_busy", retryAfter: max(1, int(s.opts.RetryAfter.Round(time.Second)/time.Second)),
			msg: "the model is busy with another generation; retry after the Retry-After delay (or start the server with a --queue)"}
	}
	defer t.release()
	ctx := c.Request().Context()
	if g.stream {
		// Start the stream before waiting in line: the heartbeat keeps
		// the client's idle timer from firing while it waits.
		if err := o.begin(c.Response(), s.opts.Heartbeat); err != nil {
			return nil // the client is gone; nobody to tell
		}
	}
	if err := t.wait(ctx); err != nil {
		return nil // the client left the line
	}

	var stopped bool
	emit := func(tok int) error {
		if stopped {
			s.emitsAfterStop.Add(1)
		}
		err := ctx.Err()
		if err == nil {
			err = o.token(tok)
		}
		if err != nil {
			stopped = true
		}
		return err
	}
	s.generations.Add(1)
	sess, rest, reused := s.convo.take(s.model, j.prompt)
	if reused {
		s.reuses.Add(1)
	}
	res, err := sess.Generate(ctx, rest, engine.GenerateOptions{MaxNew: j.maxNew, StopTokens: j.stop}, emit)
	switch {
	case ctx.Err() != nil || o.gone():
		s.log.Info("generation stopped: client gone", "tokens", res.Tokens)
		return nil
	case err != nil:
		ae := &apiError{status: http.StatusInternalServerError, kind: ErrGeneration, typ: "server_error",
			code: "generation_failed", msg: fmt.Sprintf("generation failed: %v", err)}
		s.log.Error("generation failed", "err", err)
		if o.sse != nil {
			return o.fail(ae)
		}
		return ae
	}
	s.convo.keep(sess)
	s.memo.put(j.key, memoValue{tokens: o.tokens, finish: res.FinishReason})
	s.log.Info("generation", "prompt_tokens", len(j.prompt), "prompt_tokens_run", res.PromptTokens, "tokens", res.Tokens, "finish", res.FinishReason,
		"prefill", res.Prefill, "decode", res.Decode, "reused_conversation", reused)
	return o.end(c, res.FinishReason, len(j.prompt))
}

// replay answers from the memo, as if the engine ran again.
func (s *Server) replay(c echo.Context, o *output, j *job, v memoValue) error {
	if o.g.stream {
		if err := o.begin(c.Response(), s.opts.Heartbeat); err != nil {
			return nil
		}
	}
	for _, tok := range v.tokens {
		if err := o.token(tok); err != nil {
			return nil // only a stream write fails: the client is gone
		}
	}
	return o.end(c, v.finish, len(j.prompt))
}
