package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/deltafin/deltafin/chat"
	"github.com/deltafin/deltafin/engine"
	"github.com/deltafin/deltafin/tokenizer"
	"github.com/labstack/echo/v4"
)

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
	if opts.ModelID != "" {
		meta.id, meta.desc = opts.ModelID, opts.ModelDescription
	}
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
	samp   sampling
	key    memoKey
	// replay is how many of prompt's last tokens a resumed job had
	// generated before it was cut: an engine session feeds them one
	// position at a time, as they were first decoded (generate), so the
	// logits that follow are bit for bit those of the uninterrupted run
	// and a sampled answer continues exactly.
	replay int
	// thinking, when set, reports whether the answer is still in K3's
	// think channel after the last token emitted: the ticket counts the
	// thinking phase's tokens by it ("thinking… N tokens").
	thinking func() bool
}

// forwarder is a session that runs tokens without decoding
// (engine.Session.Forward); generate replays a resumed job's tokens
// through it. A session without it gets them with the prompt.
type forwarder interface {
	Forward(ctx context.Context, ids []int, every bool) ([][]float32, error)
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
	j.samp = g.samp.resolve(s.model.Info().Sampling)
	j.key = keyOf(j.prompt, j.maxNew, j.stop, g.stop...).withSampling(j.samp.keyed())
	return j, nil
}

func (s *Server) chatCompletions(c echo.Context) error {
	return s.handle(c, decodeChat, "chatcmpl-", "chat.completion")
}

func (s *Server) completions(c echo.Context) error {
	return s.handle(c, decodeCompletion, "cmpl-", "text_completion")
}

// handle is both generation endpoints: validate, plan, then answer from the
// memo or take a turn at the engine.
func (s *Server) handle(c echo.Context, decode func([]byte, limits) (*genRequest, *apiError), idPrefix, kind string) error {
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	g, ae := decode(body, limits{modelID: s.meta.id, vocabSize: s.meta.vocabSize})
	if ae != nil {
		return ae
	}
	if len(g.ignored) > 0 {
		c.Response().Header().Set(ignoredHeader, strings.Join(g.ignored, ","))
	}
	j, ae := s.plan(g)
	if ae != nil {
		return ae
	}
	o := &output{g: g, model: s.meta.id, id: newID(idPrefix), created: time.Now().Unix(), stop: stopText{stops: g.stop}, seed: j.samp.seed}
	j.samp.report(c.Response().Header())
	if g.chat {
		o.parser = chat.NewTokenParserWith(s.tok, chatOptions(g), g.parseOptions(o.id))
	} else {
		o.dec = s.tok.NewDecoder()
	}
	defer o.close()

	return s.answer(c, j, o, kind, chatTitle(g))
}

// answerer is what answer needs of a request's output: OpenAI's (output)
// or Anthropic's (msgOutput).
type answerer interface {
	// streaming reports whether the client asked for a stream; started
	// whether the stream has begun.
	streaming() bool
	started() bool
	begin(w http.ResponseWriter, heartbeat time.Duration) error
	// token takes one generated token; engine.ErrStopped ends the answer.
	token(id int) error
	// end finishes the answer; fail ends a started stream with an error.
	end(c echo.Context, finish string, promptTokens int) error
	fail(e *apiError) error
	gone() bool
	// emitted is every token taken, for the memo.
	emitted() []int
	answerID() string
	// inThink reports whether the tokens taken so far are still in
	// K3's think channel (the queue's thinking count).
	inThink() bool
}

// answer answers j from the memo or takes a turn at the engine, writing
// through o: the queue, the stream's heartbeat while waiting, the client's
// cancellation and the server's shutdown are the same for every endpoint;
// title names the job on the page and in the menu (JobStatus.Title).
func (s *Server) answer(c echo.Context, j *job, o answerer, kind, title string) error {
	if v, ok := s.memo.get(j.key); ok && j.samp.memoizable() {
		return s.replay(c, o, j, v)
	}
	t, err := s.queue.enter(o.answerID(), kind, len(j.prompt), j.maxNew)
	if err != nil {
		return s.busy()
	}
	t.name(title)
	defer t.release()
	ctx := c.Request().Context()
	if o.streaming() {
		// Start the stream before waiting in line: the heartbeat keeps
		// the client's idle timer from firing while it waits.
		if err := o.begin(c.Response(), s.opts.Heartbeat); err != nil {
			return nil // the client is gone; nobody to tell
		}
	}
	if err := t.wait(ctx); err != nil {
		return s.endByShutdown(o) // else the client left the line: it is dropped from it
	}

	j.thinking = o.inThink
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
	res, reused, err := s.generate(ctx, t, j, emit)
	switch {
	case s.life.Err() != nil && !o.gone():
		s.log.Info("generation stopped: the server is shutting down", "tokens", res.Tokens)
		return s.endByShutdown(o)
	case ctx.Err() != nil || o.gone():
		s.log.Info("generation stopped: client gone", "tokens", res.Tokens)
		return nil
	case err != nil:
		ae := generationFailed(err)
		s.log.Error("generation failed", "err", err)
		if o.started() {
			return o.fail(ae)
		}
		return ae
	}
	if j.samp.memoizable() {
		s.memo.put(j.key, memoValue{tokens: o.emitted(), finish: res.FinishReason})
	}
	s.log.Info("generation", "kind", kind, "prompt_tokens", len(j.prompt), "prompt_tokens_run", res.PromptTokens, "tokens", res.Tokens, "finish", res.FinishReason,
		"prefill", res.Prefill, "decode", res.Decode, "reused_conversation", reused)
	return o.end(c, res.FinishReason, len(j.prompt))
}

// replay answers from the memo, as if the engine ran again.
func (s *Server) replay(c echo.Context, o answerer, j *job, v memoValue) error {
	if o.streaming() {
		if err := o.begin(c.Response(), s.opts.Heartbeat); err != nil {
			return nil
		}
	}
	for _, tok := range v.tokens {
		if err := o.token(tok); errors.Is(err, engine.ErrStopped) {
			break
		} else if err != nil {
			return nil // only a stream write fails: the client is gone
		}
	}
	return o.end(c, v.finish, len(j.prompt))
}

// busy is the answer when the line is full.
func (s *Server) busy() *apiError {
	return &apiError{status: http.StatusTooManyRequests, kind: ErrBusy, typ: "rate_limit_error",
		code: "engine_busy", retryAfter: max(1, int(s.opts.RetryAfter.Round(time.Second)/time.Second)),
		msg: fmt.Sprintf("the model is busy and %d requests wait already; retry after the Retry-After delay (or start the server with a longer --queue)", s.opts.Queue)}
}

func generationFailed(err error) *apiError {
	return &apiError{status: http.StatusInternalServerError, kind: ErrGeneration, typ: "server_error",
		code: "generation_failed", msg: fmt.Sprintf("generation failed: %v", err)}
}

// generate runs j on the engine once t's turn has come: it continues the
// kept conversation when j's prompt extends it, counts the tokens on the
// ticket, measures the rates, and keeps the session when the generation
// completes.
func (s *Server) generate(ctx context.Context, t *ticket, j *job, emit func(int) error) (engine.Result, bool, error) {
	s.generations.Add(1)
	sess, rest, reused := s.convo.take(s.model, j.prompt)
	if reused {
		s.reuses.Add(1)
	}
	t.prefill(len(rest))
	if f, ok := sess.(forwarder); ok && j.replay > 0 && j.replay < len(rest) {
		// The prompt in one pass and each earlier token in its own, as
		// the first run decoded them: one batched pass over them would
		// sum in another order, and a sampled draw near a boundary of its
		// distribution would flip.
		head := len(rest) - j.replay
		if _, err := f.Forward(ctx, rest[:head], false); err != nil {
			return engine.Result{}, reused, err
		}
		for _, tok := range rest[head : len(rest)-1] {
			if _, err := f.Forward(ctx, []int{tok}, false); err != nil {
				return engine.Result{}, reused, err
			}
		}
		rest = rest[len(rest)-1:]
	}
	res, err := sess.Generate(ctx, rest, engine.GenerateOptions{MaxNew: j.maxNew, StopTokens: j.stop, Sampling: j.samp.Sampling}, func(tok int) error {
		t.token()
		err := emit(tok)
		if j.thinking != nil {
			t.think(j.thinking())
		}
		return err
	})
	s.specMu.Lock()
	s.spec = s.spec.Add(res.Spec)
	s.specMu.Unlock()
	if err != nil || ctx.Err() != nil {
		return res, reused, err
	}
	t.measure(res)
	s.convo.keep(sess)
	return res, reused, nil
}

// endByShutdown ends a request that the server's shutdown cut (its client
// is still there): a stream with an error event, an answer not yet begun
// with a 503, Retry-After and an error body, so the client reads why
// instead of a silent cut or an empty 200 (which OpenAI's SDKs fail to
// parse).
func (s *Server) endByShutdown(o answerer) error {
	if o.gone() || s.life.Err() == nil {
		return nil
	}
	if !o.started() {
		return s.shuttingDown("")
	}
	return o.fail(s.shuttingDown(""))
}

// shuttingDown is the answer to a request the shutdown cut; a stored
// response (id) resumes at the next start and can be fetched then.
func (s *Server) shuttingDown(storedID string) *apiError {
	msg := "the server is shutting down: send the request again once it is back"
	if storedID != "" {
		msg = fmt.Sprintf("the server is shutting down; response %s is stored and resumes when it is back: GET /v1/responses/%s then", storedID, storedID)
	}
	return &apiError{status: http.StatusServiceUnavailable, kind: ErrShuttingDown, typ: "server_error",
		code: "server_shutting_down", retryAfter: max(1, int(s.opts.RetryAfter.Round(time.Second)/time.Second)), msg: msg}
}
