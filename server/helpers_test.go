package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltafin/deltafin/engine"
	"github.com/deltafin/deltafin/store"
	"github.com/deltafin/deltafin/tokenizer"
	"github.com/stretchr/testify/require"
)

// Every test here drives the real engine on testdata/k3-tiny (random
// weights: the text is gibberish, so tests check structure, token counts
// and equality with a direct engine run) through a real server on
// loopback.

const tinyDir = "../testdata/k3-tiny"

// tinyModel is opened once per test binary: it is immutable and safe for
// concurrent sessions.
var tinyModel = sync.OnceValues(func() (*engine.Model, error) {
	return engine.Open(context.Background(), tinyDir, engine.Options{})
})

var tinyTokenizer = sync.OnceValues(func() (*tokenizer.Tokenizer, error) {
	return tokenizer.Load(tinyDir)
})

func tiny(t testing.TB) (*engine.Model, *tokenizer.Tokenizer) {
	t.Helper()
	m, err := tinyModel()
	require.NoError(t, err)
	tok, err := tinyTokenizer()
	require.NoError(t, err)
	return m, tok
}

const tinyID = "deltafin-kimi-k3"

// waitLong bounds a wait for a state the server reaches on its own, polled
// every pollEvery; it only fails a test that hangs.
const (
	waitLong  = 60 * time.Second
	pollEvery = time.Millisecond
)

// startServer serves k3-tiny on a loopback port until the test ends and
// returns the server and its base URL.
func startServer(t testing.TB, configure func(*Options)) (*Server, string) {
	t.Helper()
	m, _ := tiny(t)
	return startServerWith(t, FromEngine(m), configure)
}

// startServerWith serves m (with k3-tiny's tokenizer) on loopback.
func startServerWith(t testing.TB, m Model, configure func(*Options)) (*Server, string) {
	t.Helper()
	_, tok := tiny(t)
	opts := DefaultOptions()
	opts.Port = 0
	if configure != nil {
		configure(&opts)
	}
	s, err := New(opts, m, tok)
	require.NoError(t, err)
	return s, host(t, s)
}

// host serves s on a free loopback port (Listen, Start) until the test
// ends, and returns its base URL.
func host(t testing.TB, s *Server) string {
	t.Helper()
	h, base := startHost(t, s)
	t.Cleanup(func() { require.NoError(t, h.Shutdown(context.Background())) })
	return base
}

// startHost starts s on a free loopback port; the caller shuts it down.
func startHost(t testing.TB, s *Server) (*Host, string) {
	t.Helper()
	opts := s.opts
	opts.Host, opts.Port = "127.0.0.1", 0
	ln, err := Listen(t.Context(), opts)
	require.NoError(t, err)
	h, err := s.Start(ln, nil)
	require.NoError(t, err)
	return h, "http://" + h.Addr().String()
}

// serveWithStore serves m on loopback over the store at path (opened anew,
// as a restart does), with configure's options; stop ends the server and
// closes the store, as a clean quit does.
func serveWithStore(t *testing.T, m Model, path string, configure func(*Options)) (s *Server, base string, stop func()) {
	t.Helper()
	_, tok := tiny(t)
	st, err := store.Open(path)
	require.NoError(t, err)
	opts := DefaultOptions()
	opts.Store = st
	if configure != nil {
		configure(&opts)
	}
	s, err = New(opts, m, tok)
	require.NoError(t, err)
	h, base := startHost(t, s)
	return s, base, func() {
		require.NoError(t, h.Shutdown(context.Background()))
		require.NoError(t, st.Close())
	}
}

// post sends a JSON body and returns the response, read whole.
func post(t testing.TB, url, body string, header ...string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, b
}

func get(t *testing.T, url string, header ...string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

// decodeError checks an OpenAI error body and returns it.
func decodeError(t *testing.T, body []byte) ErrorDetail {
	t.Helper()
	var raw map[string]map[string]any
	require.NoError(t, json.Unmarshal(body, &raw), string(body))
	for _, k := range []string{"message", "type", "param", "code"} {
		require.Contains(t, raw["error"], k, "OpenAI error bodies always carry %q: %s", k, body)
	}
	var e ErrorBody
	require.NoError(t, json.Unmarshal(body, &e))
	require.NotEmpty(t, e.Error.Message)
	return e.Error
}

// direct runs the engine without the server: the tokens greedy decoding
// gives for prompt.
func direct(t testing.TB, prompt []int, maxNew int, stop []int) ([]int, engine.Result) {
	t.Helper()
	return directSampled(t, prompt, maxNew, stop, engine.Sampling{})
}

// directSampled is direct with sampling.
func directSampled(t testing.TB, prompt []int, maxNew int, stop []int, samp engine.Sampling) ([]int, engine.Result) {
	t.Helper()
	m, _ := tiny(t)
	var toks []int
	res, err := m.NewSession().Generate(t.Context(), prompt, engine.GenerateOptions{MaxNew: maxNew, StopTokens: stop, Sampling: samp},
		func(tok int) error { toks = append(toks, tok); return nil })
	require.NoError(t, err)
	return toks, res
}

// sseEvent is one line of an event stream as a client sees it.
type sseEvent struct {
	comment bool
	data    string
}

// stream posts body and returns the open response and a reader of events.
func stream(t *testing.T, ctx context.Context, url, body string, header ...string) (*http.Response, func() (sseEvent, bool)) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	next := func() (sseEvent, bool) {
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "", strings.HasPrefix(line, "event: "):
				continue // a named event's type is also its data's "type"
			case strings.HasPrefix(line, ":"):
				return sseEvent{comment: true, data: line}, true
			case strings.HasPrefix(line, "data: "):
				return sseEvent{data: strings.TrimPrefix(line, "data: ")}, true
			}
			t.Errorf("unexpected SSE line %q", line)
		}
		return sseEvent{}, false
	}
	return resp, next
}

// readAll collects a stream's data events (comments counted apart).
func readAll(t *testing.T, next func() (sseEvent, bool)) (data []string, comments int) {
	t.Helper()
	for {
		ev, ok := next()
		if !ok {
			return data, comments
		}
		if ev.comment {
			comments++
			continue
		}
		data = append(data, ev.data)
	}
}

// waitIdle waits until the server's engine is free.
func waitIdle(t *testing.T, s *Server) {
	t.Helper()
	require.Eventually(t, func() bool {
		busy, queued := s.queue.counts()
		return !busy && queued == 0
	}, 60*time.Second, 5*time.Millisecond)
}

func compact(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(bytes.TrimSpace(b))
}
