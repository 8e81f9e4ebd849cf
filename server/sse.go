package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
)

// sseWriter writes server-sent events and, from a second goroutine, a
// comment every heartbeat interval. K3 streaming experts from disk can take
// many seconds per token (and longer for a long prompt's prefill); clients
// and proxies with idle timeouts drop a silent stream, and OpenAI's SDKs
// skip comment lines. Writes are serialised; the first write error sticks
// and is returned by every later write, so the generation's emit callback
// sees a vanished client at its next token.
type sseWriter struct {
	mu       sync.Mutex
	w        http.ResponseWriter
	rc       *http.ResponseController
	err      error
	stop     chan struct{}
	done     chan struct{}
	beatText []byte // what the heartbeat writes
}

// heartbeatComment is the SSE comment sent while the model works.
const heartbeatComment = ": keep-alive\n\n"

// startSSE sends the event-stream headers and starts the heartbeat.
func startSSE(w http.ResponseWriter, heartbeat time.Duration) *sseWriter {
	return startSSEBeat(w, heartbeat, heartbeatComment)
}

// startSSEBeat is startSSE with the heartbeat's own text (Anthropic's
// streams send ping events, not comments).
func startSSEBeat(w http.ResponseWriter, heartbeat time.Duration, beat string) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	// Tell nginx-like proxies not to buffer the stream.
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &sseWriter{w: w, rc: http.NewResponseController(belowEcho(w)), stop: make(chan struct{}), done: make(chan struct{}), beatText: []byte(beat)}
	s.flush()
	go s.beat(heartbeat)
	return s
}

// belowEcho returns the writer echo wraps: echo's Response.Flush drops
// flush errors, and a vanished client must show up as an error. Wrappers
// below echo (an embedding app's, net/http's own) are kept, so their Flush
// still runs.
func belowEcho(w http.ResponseWriter) http.ResponseWriter {
	if r, ok := w.(*echo.Response); ok {
		return r.Writer
	}
	return w
}

func (s *sseWriter) beat(every time.Duration) {
	defer close(s.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.write(s.beatText)
		}
	}
}

// flush must be called with s.mu held or before the heartbeat starts.
func (s *sseWriter) flush() {
	if s.err != nil {
		return
	}
	if err := s.rc.Flush(); err != nil {
		s.err = fmt.Errorf("flush event stream: %w", err)
	}
}

func (s *sseWriter) write(b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	if _, err := s.w.Write(b); err != nil {
		s.err = fmt.Errorf("write event stream: %w", err)
		return s.err
	}
	s.flush()
	return s.err
}

// failed reports whether a write has failed: the client is gone.
func (s *sseWriter) failed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err != nil
}

// event sends v as one data event.
func (s *sseWriter) event(v any) error {
	var buf bytes.Buffer
	buf.WriteString("data: ")
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // model text is full of <|markers|>; keep it readable
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode event: %w", err)
	}
	buf.WriteString("\n") // Encode ended the line; a blank line ends the event
	return s.write(buf.Bytes())
}

// named sends v as one event of the given type (the Responses API's
// "event: TYPE" lines).
func (s *sseWriter) named(typ string, v any) error {
	var buf bytes.Buffer
	buf.WriteString("event: " + typ + "\ndata: ")
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode event: %w", err)
	}
	buf.WriteString("\n")
	return s.write(buf.Bytes())
}

// finish sends the [DONE] sentinel.
func (s *sseWriter) finish() error {
	return s.write([]byte("data: [DONE]\n\n"))
}

// close stops the heartbeat; no write happens after it returns.
func (s *sseWriter) close() {
	close(s.stop)
	<-s.done
}
