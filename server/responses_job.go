package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/deltafin/deltafin/internal/usertext"
	"github.com/deltafin/deltafin/store"
)

// A Responses API job: one response generating in the job queue, with or
// without a client attached. The runner owns the authoritative renderer
// and writes the job to the store (its tokens every flushEvery, its result
// at the end); clients watch the tokens and render their own events, so
// any number of them (the creating request's stream, GET ?stream=true)
// can follow one job and a job outlives them all when it is background.

// flushEvery bounds how often a running job's new tokens are written: a
// kill loses at most this much decoding, which the resume recomputes
// exactly (greedy, or sampled from the stored seed: the random stream is
// keyed by token position).
const flushEvery = 250 * time.Millisecond

// Why a job's context ended.
var (
	errUserCancel = errors.New("server: response cancelled")
	errShutdown   = errors.New("server: shutting down")
)

type respJob struct {
	id     string
	rec    *respRecord
	base   Response
	stored bool
	cancel context.CancelCauseFunc
	done   chan struct{} // closed when the runner has returned

	mu      sync.Mutex
	toks    []int
	final   *Response     // set once finished
	changed chan struct{} // closed and replaced at every change
}

func newRespJob(id string, rec *respRecord, base Response, stored bool, toks []int) *respJob {
	return &respJob{id: id, rec: rec, base: base, stored: stored, toks: toks, done: make(chan struct{}), changed: make(chan struct{})}
}

func (j *respJob) notify() {
	close(j.changed)
	j.changed = make(chan struct{})
}

func (j *respJob) add(tok int) {
	j.mu.Lock()
	j.toks = append(j.toks, tok)
	j.notify()
	j.mu.Unlock()
}

func (j *respJob) end(r Response) {
	j.mu.Lock()
	j.final = &r
	j.notify()
	j.mu.Unlock()
}

// watch returns the tokens so far, the final response once there is one,
// and a channel closed at the next change.
func (j *respJob) watch() ([]int, *Response, <-chan struct{}) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.toks, j.final, j.changed
}

// baseResponse is the response object a record echoes, before output.
func (s *Server) baseResponse(id string, rec *respRecord) Response {
	r := Response{ID: id, Object: "response", CreatedAt: rec.CreatedAt, Background: rec.Background,
		Instructions: rec.Instructions, MaxOutputTokens: rec.MaxOutput, Model: rec.Model, Output: []OutputItem{},
		ParallelToolCalls: !rec.Serial, PreviousResponseID: rec.PreviousID, Store: rec.Store, Temperature: rec.Temperature,
		ToolChoice: rec.ToolChoice, Tools: rec.Tools, TopP: rec.TopP, Truncation: "disabled", Metadata: rec.Metadata}
	if isNull(r.ToolChoice) {
		r.ToolChoice = json.RawMessage(`"auto"`)
	}
	if r.Tools == nil {
		r.Tools = []json.RawMessage{}
	}
	if rec.MaxCalls > 0 {
		r.MaxToolCalls = &rec.MaxCalls
	}
	r.Reasoning.Effort, r.Reasoning.Summary = rec.Effort, rec.Summary
	r.Text.Format = rec.Format
	if isNull(r.Text.Format) {
		r.Text.Format = json.RawMessage(`{"type":"text"}`)
	}
	if rec.Sampling != nil {
		r.Seed = &rec.Sampling.Seed
	}
	if r.Metadata == nil {
		r.Metadata = map[string]string{}
	}
	return r
}

// startJob registers j and runs it under ctx once t's turn comes.
func (s *Server) startJob(ctx context.Context, j *respJob, t *ticket) {
	ctx, j.cancel = context.WithCancelCause(ctx)
	// A foreground job runs under its request; a shutdown must still read
	// as one, so that a stored job resumes rather than ends cancelled.
	unhook := context.AfterFunc(s.life, func() { j.cancel(errShutdown) })
	s.jobsMu.Lock()
	s.jobs[j.id] = j
	s.jobsMu.Unlock()
	s.running.Add(1)
	go func() {
		defer s.running.Done()
		defer unhook()
		defer close(j.done)
		defer t.release()
		s.runJob(ctx, j, t)
	}()
}

func (s *Server) runJob(ctx context.Context, j *respJob, t *ticket) {
	rr := newRespRender(j.base, s.tok, j.rec, nil)
	_ = rr.begin(j.rec.Background) // no sink: no error
	resumed, _, _ := j.watch()
	for _, tok := range resumed {
		_ = rr.token(tok) // a stop sequence found here finishes below
	}
	flushed, lastFlush := len(resumed), time.Now()
	flush := func(force bool) {
		toks, _, _ := j.watch()
		if !j.stored || len(toks) == flushed || (!force && time.Since(lastFlush) < flushEvery) {
			return
		}
		if err := s.store.AppendTokens(j.id, toks[flushed:]); err != nil {
			s.log.Error("store: write tokens", "id", j.id, "err", err)
			return
		}
		flushed, lastFlush = len(toks), time.Now()
	}
	finish := func(reason, errMsg string) {
		toks, _, _ := j.watch()
		resp, _ := rr.finish(reason, len(j.rec.Prompt), errMsg)
		if j.stored {
			body, err := json.Marshal(resp)
			if err == nil {
				err = s.store.Finish(j.id, store.State(resp.Status), toks[flushed:], body, errMsg)
			}
			if err != nil {
				s.log.Error("store: finish response", "id", j.id, "err", err)
			}
		}
		j.end(resp)
		s.jobsMu.Lock()
		delete(s.jobs, j.id)
		s.jobsMu.Unlock()
		s.finished(resp)
	}
	// stopped settles a job whose context ended: a shutdown (which ends
	// the server's life before any request's) leaves it pending in the
	// store, to resume at the next start.
	stopped := func() {
		if j.stored && (errors.Is(context.Cause(ctx), errShutdown) || s.life.Err() != nil) {
			flush(true)
			s.jobsMu.Lock()
			delete(s.jobs, j.id)
			s.jobsMu.Unlock()
			return
		}
		finish("cancelled", "")
	}
	if err := t.wait(ctx); err != nil {
		stopped()
		return
	}
	if j.stored {
		if err := s.store.Start(j.id); err != nil {
			s.log.Error("store: start response", "id", j.id, "err", err)
		}
	}
	left := j.rec.MaxNew - len(resumed)
	switch {
	case rr.hit:
		finish("stop", "")
		return
	case left <= 0:
		finish("length", "")
		return
	}
	prompt := append(append([]int(nil), j.rec.Prompt...), resumed...)
	// The random stream is keyed by (seed, token position): a resumed job
	// continues it from len(prompt) with nothing else saved, over the
	// tokens it had replayed as they were first decoded (job.replay).
	samp := sampling{Sampling: j.rec.Sampling.engine()}
	res, _, err := s.generate(ctx, t, &job{prompt: prompt, replay: len(resumed), maxNew: left, stop: s.chatStop, samp: samp, thinking: rr.parser.Thinking}, func(tok int) error {
		j.add(tok)
		err := rr.token(tok)
		flush(false)
		return err
	})
	switch {
	case ctx.Err() != nil:
		stopped()
	case err != nil:
		s.log.Error("response failed", "id", j.id, "err", err)
		finish("failed", "generation failed: "+usertext.Of(err))
	default:
		s.log.Info("response", "id", j.id, "prompt_tokens", len(prompt), "tokens", res.Tokens, "finish", res.FinishReason, "background", j.rec.Background)
		finish(res.FinishReason, "")
	}
}

// finished tells the embedding app (Options.OnResponse) that a response
// ended.
func (s *Server) finished(r Response) {
	if s.opts.OnResponse != nil {
		s.opts.OnResponse(r)
	}
}

// resume starts the jobs the store holds as queued or in progress (in
// arrival order, ahead of new requests), and deletes finished responses
// past the retention; Start calls it.
func (s *Server) resume() error {
	if s.store == nil {
		return nil
	}
	if s.opts.Retention > 0 {
		if n, err := s.store.Expire(time.Now().Add(-s.opts.Retention)); err != nil {
			return fmt.Errorf("server: expire responses: %w", err)
		} else if n > 0 {
			s.log.Info("expired stored responses", "count", n, "retention", s.opts.Retention)
		}
	}
	pending, err := s.store.Pending()
	if err != nil {
		return fmt.Errorf("server: resume: %w", err)
	}
	for _, pj := range pending {
		var rec respRecord
		_, toks, err := s.store.Get(pj.ID)
		if err == nil {
			err = json.Unmarshal(pj.Request, &rec)
		}
		if err != nil {
			s.log.Error("resume: unreadable job, marked failed", "id", pj.ID, "err", err)
			_ = s.store.Finish(pj.ID, store.Failed, nil, nil, "unreadable after a restart: "+err.Error())
			continue
		}
		j := newRespJob(pj.ID, &rec, s.baseResponse(pj.ID, &rec), true, toks)
		t := s.queue.admit(pj.ID, "response", len(rec.Prompt)+len(toks), rec.MaxNew).name(inputTitle(rec.Input))
		s.log.Info("resuming response", "id", pj.ID, "tokens_so_far", len(toks))
		s.startJob(s.life, j, t)
	}
	return nil
}

// stopJobs stops the running and queued jobs and waits for them: stored
// ones keep their place and tokens in the store and resume at the next
// Start (Host.Shutdown calls it).
func (s *Server) stopJobs() {
	s.stopLife(errShutdown)
	s.running.Wait()
}
