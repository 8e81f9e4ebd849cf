package web_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/app"
	"github.com/deltafin/deltafin/engine"
	"github.com/deltafin/deltafin/server"
	"github.com/deltafin/deltafin/store"
	"github.com/deltafin/deltafin/web"
)

// tinyDir is the demo model's checkpoint (k3-tiny, random weights).
var tinyDir = filepath.Join("..", "testdata", "k3-tiny")

// gate holds the demo model's generation: each token waits for a permit
// (allow) or for open, so a test sees an answer in the middle without
// timing it. Every generation ends after limit tokens.
type gate struct {
	server.Model
	limit   int
	permits chan struct{}
	opened  chan struct{}
	once    sync.Once
}

func newGate(m server.Model, limit int) *gate {
	return &gate{Model: m, limit: limit, permits: make(chan struct{}, 1<<16), opened: make(chan struct{})}
}

func (g *gate) allow(n int) {
	for range n {
		g.permits <- struct{}{}
	}
}

func (g *gate) open() { g.once.Do(func() { close(g.opened) }) }

// Info is the model's with greedy decoding as its default: the page asks
// with the model's default sampling, and a sampled answer of the random
// demo model may end before the tokens a test lets through (the tests
// wait for them); greedy, it never ends its turn.
func (g *gate) Info() engine.Info {
	info := g.Model.Info()
	info.Sampling = engine.Sampling{}
	return info
}

func (g *gate) NewSession() server.Session { return &gatedSession{Session: g.Model.NewSession(), g: g} }

type gatedSession struct {
	server.Session
	g *gate
}

func (s *gatedSession) Generate(ctx context.Context, prompt []int, opts engine.GenerateOptions, emit func(int) error) (engine.Result, error) {
	n := 0
	return s.Session.Generate(ctx, prompt, opts, func(tok int) error {
		if n == s.g.limit {
			return engine.ErrStopped
		}
		select {
		case <-s.g.permits:
		case <-s.g.opened:
		case <-ctx.Done():
			return ctx.Err()
		}
		n++
		return emit(tok)
	})
}

// served is a server on the demo model with the page mounted.
type served struct {
	base  string
	srv   *server.Server
	store *store.Store
	model *app.Model
	gate  *gate
	mu    sync.Mutex
	uris  []string // the requests served, for what the page asked
	stop  func()
}

func (s *served) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.uris...)
}

// uriLog records the request log's URIs.
type uriLog struct{ s *served }

func (h uriLog) Enabled(context.Context, slog.Level) bool { return true }
func (h uriLog) Handle(_ context.Context, r slog.Record) error {
	var line string
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "method", "uri", "status":
			line += a.Value.String() + " "
		}
		return true
	})
	if line != "" {
		h.s.mu.Lock()
		h.s.uris = append(h.s.uris, strings.TrimSpace(line))
		h.s.mu.Unlock()
	}
	return nil
}
func (h uriLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h uriLog) WithGroup(string) slog.Handler      { return h }

// serve starts the server on the demo model behind a gate, with its store
// and the page, as app.NewServer mounts it.
func serve(t *testing.T, apiKey string) *served {
	t.Helper()
	return serveIn(t, apiKey, t.TempDir())
}

// serveIn is serve over the data directory dir (its deltafin.db as found).
func serveIn(t *testing.T, apiKey, dir string) *served {
	t.Helper()
	return serveWith(t, apiKey, dir, nil)
}

// serveWith is serveIn with deltafin serve's flags for /settings.
func serveWith(t *testing.T, apiKey, dir string, flags []web.Flag) *served {
	t.Helper()
	return serveOn(t, apiKey, dir, nil, flags)
}

// serveModel is serveIn with the model the server runs: the demo model
// behind the gate when m is nil, else m (a scripted K3) with the demo's
// tokenizer and engine figures.
func serveModel(t *testing.T, apiKey, dir string, m server.Model) *served {
	t.Helper()
	return serveOn(t, apiKey, dir, m, nil)
}

// serveOn is serveModel with deltafin serve's flags for /settings.
func serveOn(t *testing.T, apiKey, dir string, m server.Model, flags []web.Flag) *served {
	t.Helper()
	cfg := app.DefaultConfig(func(string) string { return "" })
	cfg.DataDir = dir
	em, err := app.OpenModel(t.Context(), cfg, app.ModelRef{Dir: tinyDir, NeedTokenizer: true})
	require.NoError(t, err)
	st, err := store.Open(filepath.Join(cfg.DataDir, store.FileName))
	require.NoError(t, err)
	s := &served{store: st, model: em, gate: newGate(server.FromEngine(em.Model), 24)}
	if m == nil {
		m = s.gate
	}
	opts := server.DefaultOptions()
	opts.Store, opts.APIKey, opts.ModelID = st, apiKey, app.DemoModelID
	opts.Logger = slog.New(uriLog{s})
	s.srv, err = server.New(opts, m, em.Tokenizer)
	require.NoError(t, err)
	page, err := web.New(web.Options{Server: s.srv, Store: st, APIKey: apiKey, Engine: em.Model, Demo: true, Flags: flags})
	require.NoError(t, err)
	s.srv.Mount(page.Mount)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.srv.Serve(ctx, ln) }()
	s.base = "http://" + ln.Addr().String()
	s.stop = func() {
		s.gate.open()
		cancel()
		require.NoError(t, <-done)
		require.NoError(t, st.Close())
		require.NoError(t, em.Close())
	}
	t.Cleanup(s.stop)
	return s
}

// call sends a request to the server and returns the status and body.
func call(t *testing.T, method, url string, body string, header ...string) (int, string) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, url, r)
	require.NoError(t, err)
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil && !errors.Is(err, io.EOF) {
		require.NoError(t, err)
	}
	return resp.StatusCode, string(b)
}
