package web

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/deltafin/deltafin/server"
	"github.com/deltafin/deltafin/store"
)

// askRequest is the prompt box.
type askRequest struct {
	Conversation string `json:"conversation_id"`
	Prompt       string `json:"prompt"`
	Thinking     bool   `json:"thinking"`
	Effort       string `json:"effort"`
}

// ask starts a background response of the Responses API for a prompt,
// continuing the conversation's last response (previous_response_id), and
// records the turn.
func (w *Web) ask(c echo.Context) error {
	if w.opts.Store == nil {
		return problem(c, http.StatusServiceUnavailable, "no_store", "this server keeps no job store, so it cannot answer in the background")
	}
	var req askRequest
	if err := readJSON(c, 1<<20, &req, false); err != nil {
		return err
	}
	req.Prompt = strings.TrimSpace(req.Prompt)
	if req.Prompt == "" {
		return problem(c, http.StatusBadRequest, "empty", "the prompt is empty")
	}
	effort := "none"
	if req.Thinking {
		switch req.Effort {
		case "low", "high", "max":
			effort = req.Effort
		default:
			return problem(c, http.StatusBadRequest, "effort", "effort is low, high or max, not %q", req.Effort)
		}
	}
	var conv *store.Conversation
	if req.Conversation != "" {
		var err error
		if conv, err = w.opts.Store.Conversation(req.Conversation); err != nil {
			return w.storeError(c, err)
		}
	}
	body := map[string]any{"model": w.opts.Server.ModelID(), "input": req.Prompt, "background": true, "store": true,
		"reasoning": map[string]string{"effort": effort}}
	if conv != nil && len(conv.Turns) > 0 {
		body["previous_response_id"] = conv.Turns[len(conv.Turns)-1].ResponseID
	}
	b, _ := json.Marshal(body)
	rec := httptest.NewRecorder()
	w.forward(c, rec, http.MethodPost, "/v1/responses", nil, b)
	if rec.Code != http.StatusOK {
		// The API's own error (a full queue's 429, a prompt too long).
		for k, v := range rec.Header() {
			c.Response().Header()[k] = v
		}
		return c.Blob(rec.Code, echo.MIMEApplicationJSON, rec.Body.Bytes())
	}
	var resp server.Response
	if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil || resp.ID == "" {
		return problem(c, http.StatusBadGateway, "bad_response", "the API answered without a response id")
	}
	turn := store.Turn{Prompt: req.Prompt, Thinking: req.Thinking, Effort: effort, ResponseID: resp.ID}
	var err error
	if conv == nil {
		conv = &store.Conversation{ID: newID(), Title: title(req.Prompt), Turns: []store.Turn{turn}}
		err = w.opts.Store.SaveConversation(conv)
	} else {
		conv, err = w.opts.Store.EditConversation(conv.ID, func(cv *store.Conversation) error {
			cv.Turns = append(cv.Turns, turn)
			return nil
		})
	}
	if err != nil {
		return w.storeError(c, err)
	}
	return c.JSON(http.StatusOK, conv)
}

// forward sends a request to the API in this process, as the page's user:
// the API key added, the browser's Origin and cookies left out (the guard
// checked them).
func (w *Web) forward(c echo.Context, rw http.ResponseWriter, method, path string, query url.Values, body []byte) {
	r := c.Request()
	u := &url.URL{Path: path, RawQuery: query.Encode()}
	fr, _ := http.NewRequestWithContext(r.Context(), method, u.String(), bytes.NewReader(body))
	fr.Host, fr.RemoteAddr, fr.RequestURI = r.Host, r.RemoteAddr, u.String()
	fr.ContentLength = int64(len(body))
	if body != nil {
		fr.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	}
	if w.opts.APIKey != "" {
		fr.Header.Set(echo.HeaderAuthorization, "Bearer "+w.opts.APIKey)
	}
	w.opts.Server.ServeHTTP(rw, fr)
}

// streamResponse follows a response's events after starting_after: what
// the page reads while an answer is generated, and again after a reload.
func (w *Web) streamResponse(c echo.Context) error {
	q := url.Values{"stream": {"true"}}
	if v := c.QueryParam("starting_after"); v != "" {
		if _, err := strconv.Atoi(v); err != nil {
			return problem(c, http.StatusBadRequest, "starting_after", "starting_after is a number, not %q", v)
		}
		q.Set("starting_after", v)
	}
	w.forward(c, c.Response(), http.MethodGet, "/v1/responses/"+url.PathEscape(c.Param("id")), q, nil)
	return nil
}

// cancelResponse is the Stop button.
func (w *Web) cancelResponse(c echo.Context) error {
	w.forward(c, c.Response(), http.MethodPost, "/v1/responses/"+url.PathEscape(c.Param("id"))+"/cancel", nil, nil)
	return nil
}

// turnDone keeps an ended answer's text in the conversation.
func (w *Web) turnDone(c echo.Context) error {
	if w.opts.Store == nil {
		return problem(c, http.StatusServiceUnavailable, "no_store", "no job store")
	}
	n, err := strconv.Atoi(c.Param("n"))
	if err != nil {
		return problem(c, http.StatusBadRequest, "turn", "bad turn number %q", c.Param("n"))
	}
	var done struct {
		ResponseID, Status, Answer, Reasoning string
	}
	if err := readJSON(c, 64<<20, &done, false); err != nil {
		return err
	}
	conv, err := w.opts.Store.EditConversation(c.Param("id"), func(cv *store.Conversation) error {
		if n < 0 || n >= len(cv.Turns) || cv.Turns[n].ResponseID != done.ResponseID {
			return errTurn
		}
		t := &cv.Turns[n]
		t.Status, t.Answer, t.Reasoning = done.Status, done.Answer, done.Reasoning
		return nil
	})
	if errors.Is(err, errTurn) {
		return problem(c, http.StatusConflict, "turn", "turn %d of this conversation is not response %s", n, done.ResponseID)
	}
	if err != nil {
		return w.storeError(c, err)
	}
	return c.JSON(http.StatusOK, conv)
}

var errTurn = errors.New("web: no such turn")

func (w *Web) listConversations(c echo.Context) error {
	if w.opts.Store == nil {
		return c.JSON(http.StatusOK, []any{})
	}
	all, err := w.opts.Store.Conversations()
	if err != nil {
		return w.storeError(c, err)
	}
	type entry struct {
		ID, Title string
		Turns     int
	}
	out := make([]entry, 0, len(all))
	for _, cv := range all {
		out = append(out, entry{cv.ID, cv.Title, len(cv.Turns)})
	}
	return c.JSON(http.StatusOK, out)
}

func (w *Web) getConversation(c echo.Context) error {
	if w.opts.Store == nil {
		return problem(c, http.StatusNotFound, "not_found", "no job store")
	}
	cv, err := w.opts.Store.Conversation(c.Param("id"))
	if err != nil {
		return w.storeError(c, err)
	}
	return c.JSON(http.StatusOK, cv)
}

func (w *Web) deleteConversation(c echo.Context) error {
	if w.opts.Store == nil {
		return problem(c, http.StatusNotFound, "not_found", "no job store")
	}
	if err := w.opts.Store.DeleteConversation(c.Param("id")); err != nil {
		return w.storeError(c, err)
	}
	return c.NoContent(http.StatusNoContent)
}

// queue is the list of queued and running answers, each with the
// conversation it belongs to.
func (w *Web) queue(c echo.Context) error {
	qs := w.opts.Server.Queue()
	titles := map[string]string{}
	if w.opts.Store != nil {
		all, err := w.opts.Store.Conversations()
		if err != nil {
			return w.storeError(c, err)
		}
		for _, cv := range all {
			for _, t := range cv.Turns {
				titles[t.ResponseID] = cv.ID + "\x00" + cv.Title
			}
		}
	}
	// A job in a conversation is named by the conversation's title; one
	// from the API by the request's first words (JobStatus.Title, kept as
	// server_title when the conversation's title overrides it).
	type job struct {
		server.JobStatus
		ServerTitle  string `json:"server_title,omitempty"`
		Conversation string `json:"conversation_id,omitempty"`
		Title        string `json:"title,omitempty"`
	}
	var jobs []job
	add := func(st server.JobStatus) {
		id, t, _ := strings.Cut(titles[st.ID], "\x00")
		if t == "" {
			t = st.Title
		}
		jobs = append(jobs, job{st, st.Title, id, t})
	}
	if qs.Running != nil {
		add(*qs.Running)
	}
	for _, st := range qs.Queued {
		add(st)
	}
	return c.JSON(http.StatusOK, map[string]any{"jobs": jobs, "decode_tokens_per_second": qs.DecodeRate,
		"prefill_tokens_per_second": qs.PrefillRate, "depth": qs.Depth})
}

func (w *Web) storeError(c echo.Context, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return problem(c, http.StatusNotFound, "not_found", "%s", userText(err))
	}
	w.log.Error("web: store", "err", err)
	return problem(c, http.StatusInternalServerError, "store", "%s", userText(err))
}

func newID() string {
	var b [9]byte
	_, _ = rand.Read(b[:])
	return "conv_" + hex.EncodeToString(b[:])
}

// title is a conversation's name: its first prompt's first line, cut at
// 60 characters.
func title(prompt string) string {
	line, _, _ := strings.Cut(prompt, "\n")
	if utf8.RuneCountInString(line) <= 60 {
		return line
	}
	r := []rune(line)
	return strings.TrimSpace(string(r[:59])) + "…"
}
