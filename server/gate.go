package server

import (
	"context"
	"sync"
)

// gate lets one generation run at a time: the engine has one set of
// weights streaming from disk, and two interleaved generations would each
// run at half speed while thrashing the expert cache. Requests that arrive
// while one runs wait in a bounded FIFO line, or are refused when the line
// is full (maxQueue 0: refused at once, the client retries after
// Retry-After).
type gate struct {
	mu       sync.Mutex
	busy     bool
	line     []*ticket
	maxQueue int
}

// A ticket is one request's place: running or waiting in line. Its owner
// must call release exactly when done with it, whatever happened.
type ticket struct {
	g        *gate
	ready    chan struct{} // closed when the ticket's turn comes
	granted  bool          // under g.mu
	released bool          // under g.mu
}

func newGate(maxQueue int) *gate {
	return &gate{maxQueue: max(maxQueue, 0)}
}

// enter admits a request: its turn is now or it waits in line; with the
// line full it returns ErrBusy.
func (g *gate) enter() (*ticket, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	t := &ticket{g: g, ready: make(chan struct{})}
	switch {
	case !g.busy:
		g.busy = true
		t.granted = true
		close(t.ready)
	case len(g.line) < g.maxQueue:
		g.line = append(g.line, t)
	default:
		return nil, ErrBusy
	}
	return t, nil
}

// wait blocks until the ticket's turn or until ctx ends (the client left).
func (t *ticket) wait(ctx context.Context) error {
	select {
	case <-t.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// release gives the turn to the first in line, or leaves the line. It is
// safe to call more than once.
func (t *ticket) release() {
	g := t.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if t.released {
		return
	}
	t.released = true
	if !t.granted {
		for i, w := range g.line {
			if w == t {
				g.line = append(g.line[:i], g.line[i+1:]...)
				break
			}
		}
		return
	}
	if len(g.line) == 0 {
		g.busy = false
		return
	}
	next := g.line[0]
	g.line = g.line[1:]
	next.granted = true
	close(next.ready)
}

// status reports whether a generation runs and how many wait.
func (g *gate) status() (busy bool, queued int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.busy, len(g.line)
}
