package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/deltafin/deltafin/chat"
	"github.com/deltafin/deltafin/engine"
	"github.com/deltafin/deltafin/store"
	"github.com/labstack/echo/v4"
)

// The Responses API: POST /v1/responses creates a response (streamed,
// waited for, or in the background), GET /v1/responses/{id} retrieves it
// (or follows its stream from starting_after), POST .../cancel stops a
// background one, DELETE removes it and GET .../input_items lists what it
// was asked. Every response is a job in the one queue; a stored one (the
// default) is in the store before create answers, so it survives quits
// and kills and resumes at the next start.

func notFound(id string) *apiError {
	return &apiError{status: http.StatusNotFound, kind: ErrInvalidRequest, typ: "invalid_request_error",
		code: "not_found", msg: fmt.Sprintf("no response with id %q", id)}
}

func (s *Server) noStore(param string) *apiError {
	return unsupported(param, "this server runs without a store (the app and deltafin serve keep one in the data directory)")
}

// planResponse settles a record's conversation (previous_response_id's
// turns first), renders and tokenizes it, and its token limit.
func (s *Server) planResponse(rec *respRecord) *apiError {
	rec.Messages = nil
	if rec.PreviousID != nil {
		if s.store == nil {
			return s.noStore("previous_response_id")
		}
		prev, err := s.storedResponse(*rec.PreviousID)
		if err != nil {
			return invalid(codeInvalidValue, "previous_response_id", "%v", err)
		}
		rec.Messages = append(rec.Messages, prev.rec.Messages...)
		reply := convMessage{Role: "assistant"}
		for _, it := range prev.resp.Output {
			if it.Type == "function_call" && it.Status == "completed" {
				reply.Calls = append(reply.Calls, convCall{ID: it.ID, CallID: it.CallID, Name: it.Name, Arguments: it.Arguments})
			}
			for _, p := range it.Content {
				if it.Type == "reasoning" {
					reply.Reasoning += p.Text
				} else {
					reply.Content += p.Text
				}
			}
		}
		rec.Messages = append(rec.Messages, reply)
	}
	rec.Messages = append(rec.Messages, rec.Input...)
	samp := rec.samp.resolve(s.model.Info().Sampling)
	rec.Sampling, rec.Temperature, rec.TopP = samp.stored(), samp.Temperature, samp.TopP
	if rec.TopP == 0 {
		rec.TopP = 1 // no nucleus, in the Responses API's terms
	}
	msgs, opts := rec.render()
	segs, err := chat.Render(msgs, opts)
	if err != nil {
		return invalid(codeInvalidValue, "input", "%v", err)
	}
	rec.Prompt = chat.Tokenize(s.tok, segs)
	room := s.meta.contextLen - len(rec.Prompt)
	if room < 1 {
		return invalid("context_length_exceeded", "input", "the conversation is %d tokens; the model's context holds %d", len(rec.Prompt), s.meta.contextLen)
	}
	if s.opts.MaxTokens > 0 && (rec.MaxNew == 0 || rec.MaxNew > s.opts.MaxTokens) {
		rec.MaxNew = s.opts.MaxTokens
	}
	if rec.MaxNew == 0 || rec.MaxNew > room {
		rec.MaxNew = room
	}
	return nil
}

// stored is a finished response read back from the store.
type stored struct {
	rec  respRecord
	resp Response
	toks []int
}

func (s *Server) storedResponse(id string) (*stored, error) {
	j, toks, err := s.store.Get(id)
	if err != nil {
		return nil, err
	}
	st := &stored{toks: toks}
	if err := json.Unmarshal(j.Request, &st.rec); err != nil {
		return nil, fmt.Errorf("response %s: %w", id, err)
	}
	if !j.State.Finished() {
		return nil, fmt.Errorf("response %s is still %s", id, j.State)
	}
	if err := json.Unmarshal(j.Result, &st.resp); err != nil {
		return nil, fmt.Errorf("response %s: %w", id, err)
	}
	return st, nil
}

func (s *Server) createResponse(c echo.Context) error {
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	rec, stream, ae := decodeResponseRequest(body, limits{modelID: s.meta.id, vocabSize: s.meta.vocabSize})
	if ae != nil {
		return ae
	}
	if len(rec.Ignored) > 0 {
		c.Response().Header().Set(ignoredHeader, strings.Join(rec.Ignored, ","))
	}
	if rec.Background && s.store == nil {
		return s.noStore("background")
	}
	if ae := s.planResponse(rec); ae != nil {
		return ae
	}
	id := newID("resp_")
	for i := range rec.Input {
		m := &rec.Input[i]
		in := id[len("resp_"):] + "_in" + strconv.Itoa(i)
		if m.ID == "" {
			m.ID = "msg_" + in
			if m.Role == "tool" {
				m.ID = "fco_" + in
			}
		}
		for k := range m.Calls {
			if m.Calls[k].ID == "" {
				m.Calls[k].ID = "fc_" + in + "_" + strconv.Itoa(k)
			}
		}
	}
	rec.CreatedAt = time.Now().Unix()
	c.Response().Header().Set(seedHeader, strconv.FormatInt(rec.Sampling.Seed, 10))
	stored := rec.Store && s.store != nil
	t, err := s.queue.enter(id, "response", len(rec.Prompt), rec.MaxNew)
	if err != nil {
		return s.busy()
	}
	t.name(inputTitle(rec.Input))
	if stored {
		req, err := json.Marshal(rec)
		if err == nil {
			err = s.store.Create(&store.Job{ID: id, Kind: "response", Background: rec.Background, Request: req})
		}
		if err != nil {
			t.release()
			return &apiError{status: http.StatusInternalServerError, kind: ErrGeneration, typ: "server_error",
				code: "store_failed", msg: fmt.Sprintf("could not store the response: %v", err)}
		}
	}
	j := newRespJob(id, rec, s.baseResponse(id, rec), stored, nil)
	ctx := s.life
	if !rec.Background {
		ctx = c.Request().Context() // the client leaving cancels it
	}
	s.startJob(ctx, j, t)
	switch {
	case stream:
		return s.followResponse(c, j, -1)
	case rec.Background:
		r := j.base
		r.Status = "queued"
		return c.JSON(http.StatusOK, r)
	}
	select {
	case <-j.done:
	case <-c.Request().Context().Done():
	}
	_, final, _ := j.watch()
	if final == nil {
		if s.life.Err() != nil {
			// Shutting down: a stored job resumes at the next start.
			if stored {
				return s.shuttingDown(id)
			}
			return s.shuttingDown("")
		}
		return nil // the client left
	}
	return c.JSON(http.StatusOK, final)
}

// source is what a client follows: a live job or a stored response.
type source interface {
	watch() ([]int, *Response, <-chan struct{})
}

type finishedSource struct {
	toks  []int
	final *Response
}

func (f finishedSource) watch() ([]int, *Response, <-chan struct{}) { return f.toks, f.final, nil }

// lookup finds a response, live or stored.
func (s *Server) lookup(id string) (src source, rec *respRecord, base Response, err error) {
	s.jobsMu.Lock()
	j := s.jobs[id]
	s.jobsMu.Unlock()
	if j != nil {
		return j, j.rec, j.base, nil
	}
	if s.store == nil {
		return nil, nil, Response{}, notFound(id)
	}
	st, err := s.storedResponse(id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, Response{}, notFound(id)
	}
	if err != nil {
		// In the store but neither live nor finished: resuming.
		return nil, nil, Response{}, &apiError{status: http.StatusServiceUnavailable, kind: ErrBusy, typ: "server_error",
			code: "resuming", retryAfter: 1, msg: err.Error()}
	}
	return finishedSource{toks: st.toks, final: &st.resp}, &st.rec, s.baseResponse(id, &st.rec), nil
}

func (s *Server) getResponse(c echo.Context) error {
	id := c.Param("id")
	src, rec, base, err := s.lookup(id)
	if err != nil {
		return err
	}
	if c.QueryParam("stream") == "true" {
		after := -1
		if v := c.QueryParam("starting_after"); v != "" {
			if after, err = strconv.Atoi(v); err != nil || after < -1 {
				return invalid(codeInvalidValue, "starting_after", "must be a sequence number, not %q", v)
			}
		}
		return s.follow(c, src, rec, base, after)
	}
	toks, final, _ := src.watch()
	if final != nil {
		return c.JSON(http.StatusOK, final)
	}
	rr := newRespRender(base, s.tok, rec, nil)
	for _, tok := range toks {
		if rr.token(tok) != nil {
			break
		}
	}
	status := "in_progress"
	if st := s.queue.status(); st.Running == nil || st.Running.ID != id {
		status = "queued"
	}
	return c.JSON(http.StatusOK, rr.snapshot(status))
}

func (s *Server) followResponse(c echo.Context, j *respJob, after int) error {
	return s.follow(c, j, j.rec, j.base, after)
}

// follow streams a response's events numbered after after: replayed from
// its tokens so far, then live until it ends or the client leaves. There
// is no [DONE]: the terminal response event ends the stream.
func (s *Server) follow(c echo.Context, src source, rec *respRecord, base Response, after int) error {
	sse := startSSE(c.Response(), s.opts.Heartbeat)
	defer sse.close()
	rr := newRespRender(base, s.tok, rec, func(ev ResponseEvent) error {
		if ev.SequenceNumber <= after {
			return nil
		}
		return sse.named(ev.Type, ev)
	})
	if err := rr.begin(rec.Background); err != nil {
		return nil
	}
	ctx := c.Request().Context()
	sent := 0
	for {
		toks, final, changed := src.watch()
		for ; sent < len(toks); sent++ {
			if err := rr.token(toks[sent]); err != nil && !errors.Is(err, engine.ErrStopped) {
				return nil // the client is gone
			}
		}
		if final != nil {
			_, _ = rr.finish(finishOf(final), final.Usage.inputTokens(), errorOf(final))
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			if s.life.Err() != nil {
				// The shutdown cut it: say so, as chat's stream does.
				ae := s.shuttingDown("")
				if rec.Store && s.store != nil {
					ae = s.shuttingDown(base.ID)
				}
				_ = sse.named("error", ResponseErrorEvent{Type: "error", Code: ae.code, Message: ae.text(), SequenceNumber: rr.seq})
				rr.seq++
			}
			return nil
		}
	}
}

// finishOf maps a final status back to what the renderer finishes with.
func finishOf(r *Response) string {
	switch r.Status {
	case "incomplete":
		return "length"
	case "cancelled", "failed":
		return r.Status
	}
	return "stop"
}

func errorOf(r *Response) string {
	if r.Error != nil {
		return r.Error.Message
	}
	return ""
}

func (u *ResponseUsage) inputTokens() int {
	if u == nil {
		return 0
	}
	return u.InputTokens
}

func (s *Server) cancelResponse(c echo.Context) error {
	id := c.Param("id")
	src, rec, _, err := s.lookup(id)
	if err != nil {
		return err
	}
	if !rec.Background {
		return invalid(codeInvalidValue, "response_id", "only a background response can be cancelled; close the connection to stop this one")
	}
	if j, ok := src.(*respJob); ok {
		j.cancel(errUserCancel)
		<-j.done
	}
	_, final, _ := src.watch()
	if final == nil {
		return notFound(id)
	}
	return c.JSON(http.StatusOK, final)
}

func (s *Server) deleteResponse(c echo.Context) error {
	id := c.Param("id")
	src, _, _, err := s.lookup(id)
	if err != nil {
		return err
	}
	if j, ok := src.(*respJob); ok {
		j.cancel(errUserCancel)
		<-j.done
	}
	if s.store != nil {
		if err := s.store.Delete(id); err != nil && !errors.Is(err, store.ErrNotFound) {
			return &apiError{status: http.StatusInternalServerError, kind: ErrGeneration, typ: "server_error",
				code: "store_failed", msg: err.Error()}
		}
	}
	return c.JSON(http.StatusOK, ResponseDeleted{ID: id, Object: "response", Deleted: true})
}

func (s *Server) inputItems(c echo.Context) error {
	_, rec, _, err := s.lookup(c.Param("id"))
	if err != nil {
		return err
	}
	var items []InputItemOut
	for _, m := range rec.Input {
		part := OutputPart{Type: "input_text", Text: m.Content}
		switch {
		case m.Role == "tool":
			out := m.Content
			items = append(items, InputItemOut{Type: "function_call_output", ID: m.ID, Status: "completed", CallID: m.CallID, Output: &out})
			continue
		case m.Role == "assistant":
			part = OutputPart{Type: "output_text", Text: m.Content, Annotations: &[]json.RawMessage{}}
		}
		if !m.CallsOnly {
			items = append(items, InputItemOut{Type: "message", ID: m.ID, Status: "completed", Role: m.Role, Content: []OutputPart{part}})
		}
		for _, c := range m.Calls {
			args := c.Arguments
			items = append(items, InputItemOut{Type: "function_call", ID: c.ID, Status: "completed", CallID: c.CallID, Name: c.Name, Arguments: &args})
		}
	}
	if items == nil {
		items = []InputItemOut{}
	}
	if order := c.QueryParam("order"); order != "asc" {
		if order != "" && order != "desc" {
			return invalid(codeInvalidValue, "order", "must be asc or desc, not %q", order)
		}
		for i, k := 0, len(items)-1; i < k; i, k = i+1, k-1 {
			items[i], items[k] = items[k], items[i]
		}
	}
	if after := c.QueryParam("after"); after != "" {
		for i, it := range items {
			if it.ID == after {
				items = items[i+1:]
				break
			}
		}
	}
	limit := 20
	if v := c.QueryParam("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > 100 {
			return invalid(codeInvalidValue, "limit", "must be between 1 and 100, not %q", v)
		}
	}
	list := InputItemList{Object: "list", Data: items}
	if len(items) > limit {
		list.Data, list.HasMore = items[:limit], true
	}
	if len(list.Data) > 0 {
		first, last := list.Data[0].ID, list.Data[len(list.Data)-1].ID
		list.FirstID, list.LastID = &first, &last
	}
	return c.JSON(http.StatusOK, list)
}
