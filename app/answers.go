package app

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// watchGenerations wraps the API handler so that every generation keeps the
// machine awake while it runs (busy) and reports its length and the first
// words of its answer when it ends (finished), without the server knowing
// about the menu bar. It reads the answer from the response as it streams:
// the OpenAI or Anthropic JSON body, or the content (text) deltas of
// server-sent events.
func watchGenerations(h http.Handler, busy func(reason string) func(), finished func(time.Duration, string)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || (r.URL.Path != "/v1/chat/completions" && r.URL.Path != "/v1/completions" && r.URL.Path != "/v1/messages") {
			h.ServeHTTP(w, r)
			return
		}
		done := busy("generating an answer")
		start := time.Now()
		aw := &answerWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(aw, r)
		done()
		if aw.status < 300 {
			finished(time.Since(start), aw.answer())
		}
	})
}

// answerKeep is how much of an answer is kept: a notification shows a
// dozen words.
const answerKeep = 400

// answerWriter passes everything through and keeps the start of the
// answer's text.
type answerWriter struct {
	http.ResponseWriter
	status  int
	sse     bool
	line    []byte       // an incomplete SSE line
	body    bytes.Buffer // a JSON body, up to its limit
	content strings.Builder
}

func (a *answerWriter) WriteHeader(code int) {
	a.status = code
	a.sse = strings.HasPrefix(a.Header().Get("Content-Type"), "text/event-stream")
	a.ResponseWriter.WriteHeader(code)
}

func (a *answerWriter) Write(p []byte) (int, error) {
	n, err := a.ResponseWriter.Write(p)
	if a.sse || strings.HasPrefix(a.Header().Get("Content-Type"), "text/event-stream") {
		a.sse = true
		a.scan(p[:n])
	} else if a.body.Len() < 4<<20 {
		a.body.Write(p[:n])
	}
	return n, err
}

// Flush and Unwrap keep streaming working through the wrapper.
func (a *answerWriter) Flush() {
	if f, ok := a.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (a *answerWriter) Unwrap() http.ResponseWriter { return a.ResponseWriter }

// scan reads SSE data lines as they arrive.
func (a *answerWriter) scan(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if len(a.line) < 1<<20 {
				a.line = append(a.line, p...)
			}
			return
		}
		line := append(a.line, p[:i]...)
		a.line, p = a.line[:0], p[i+1:]
		data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r"), []byte("data:"))
		if !ok || a.content.Len() >= answerKeep {
			continue
		}
		var chunk completion
		if json.Unmarshal(bytes.TrimSpace(data), &chunk) == nil {
			a.add(chunk)
		}
	}
}

// completion is the part of OpenAI's chat, completion and chunk objects,
// and of Anthropic's message and content_block_delta events, that carries
// the answer's text.
type completion struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	Delta struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"delta"`
	Choices []struct {
		Text    string `json:"text"`
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
	} `json:"choices"`
}

func (a *answerWriter) add(c completion) {
	for _, b := range c.Content {
		if b.Type == "text" {
			a.content.WriteString(b.Text)
		}
	}
	if c.Delta.Type == "text_delta" {
		a.content.WriteString(c.Delta.Text)
	}
	if len(c.Choices) == 0 {
		return
	}
	ch := c.Choices[0]
	a.content.WriteString(ch.Text + ch.Message.Content + ch.Delta.Content)
}

func (a *answerWriter) answer() string {
	if !a.sse {
		var c completion
		if json.Unmarshal(a.body.Bytes(), &c) == nil {
			a.add(c)
		}
	}
	return a.content.String()
}
