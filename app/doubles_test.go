package app

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// A warmer whose pace and length the tests choose (the idle and power
// logic around it is what they test), and, until the API server (issue 8)
// lands, an HTTP server on loopback.

// countingWarmer "fetches" experts one step at a time; interrupted runs
// resume where they stopped.
type countingWarmer struct {
	mu      sync.Mutex
	done    int
	total   int
	step    time.Duration
	started chan struct{} // receives when a run starts, if not nil
}

const expertBytes = 17_547_264

func (w *countingWarmer) Warm(ctx context.Context, progress func(Progress)) (WarmResult, error) {
	if w.started != nil {
		select {
		case w.started <- struct{}{}:
		default:
		}
	}
	var r WarmResult
	for {
		w.mu.Lock()
		left := w.done < w.total
		if left {
			w.done++
			r.Experts++
			r.Bytes += expertBytes
		}
		p := Progress{Done: int64(w.done) * expertBytes, Total: int64(w.total) * expertBytes}
		w.mu.Unlock()
		if !left {
			return r, nil
		}
		progress(p)
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-time.After(w.step):
		}
	}
}

// httpServer serves /health on a loopback port; demo shows in the body.
type httpServer struct {
	mu  sync.Mutex
	srv *http.Server
}

func (s *httpServer) Start(ctx context.Context, demo bool) (string, error) {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "ok demo=%v\n", demo)
	})}
	go srv.Serve(ln)
	s.mu.Lock()
	s.srv = srv
	s.mu.Unlock()
	return "http://" + ln.Addr().String(), nil
}

func (s *httpServer) Stop(ctx context.Context) error {
	s.mu.Lock()
	srv := s.srv
	s.srv = nil
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	return srv.Shutdown(ctx)
}
