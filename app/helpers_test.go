package app

import (
	"net/http"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/downloader/hubtest"
)

// hubConfig is a validated configuration whose model source is the fake hub
// h and whose data directory is a fresh temporary one.
func hubConfig(t *testing.T, h *hubtest.Hub) Config {
	env := map[string]string{"HF_ENDPOINT": h.URL() + "/", "HF_TOKEN": h.Token}
	cfg := DefaultConfig(func(k string) string { return env[k] })
	cfg.DataDir = t.TempDir()
	require.NoError(t, cfg.Validate())
	return cfg
}

// gatedHub is the fake hub serving k3-tiny whose range requests can be held:
// after hold(n), n more are answered and the rest wait until release (or
// until their client gives up). Tests use it to see a download in progress
// without timing it.
type gatedHub struct {
	*hubtest.Hub
	mu     sync.Mutex
	passes int
	open   chan struct{} // nil: not held
}

func newGatedHub(t *testing.T) *gatedHub {
	g := &gatedHub{Hub: hubtest.New(t, filepath.Join("..", "testdata", "k3-tiny"))}
	g.SetFault(func(w http.ResponseWriter, r *http.Request, f *hubtest.File, start, end int64) bool {
		g.mu.Lock()
		wait := g.open
		if wait != nil && g.passes > 0 {
			g.passes--
			wait = nil
		}
		g.mu.Unlock()
		if wait == nil {
			return false
		}
		select {
		case <-wait:
			return false
		case <-r.Context().Done():
			return true
		}
	})
	t.Cleanup(g.release)
	return g
}

// hold answers n more range requests, then holds the rest.
func (g *gatedHub) hold(n int) {
	g.mu.Lock()
	g.passes, g.open = n, make(chan struct{})
	g.mu.Unlock()
}

// release answers every held request and holds no more.
func (g *gatedHub) release() {
	g.mu.Lock()
	if g.open != nil {
		close(g.open)
		g.open = nil
	}
	g.mu.Unlock()
}
