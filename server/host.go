package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Serving a Server, in one place: deltafin serve, the menu-bar app and the
// tests all listen with Listen and serve with Start (or Serve, which is
// Start until a context ends). The lifetimes it keeps apart:
//
//   - a request's context ends when its client leaves, or at the shutdown
//     after the jobs' (so a stored job the shutdown cuts reads it as a
//     shutdown and stays pending, not as its client leaving);
//   - the server's life (background responses, resumed jobs) ends only at
//     the shutdown; their tokens are stored and they resume at the next
//     Start over the same store.

// ErrPortInUse: the address a server was asked to listen on is taken (by
// another program, or another Deltafin with another data directory).
var ErrPortInUse = errors.New("the port is in use")

// Listen binds opts.Host:opts.Port, or, when that port is taken and
// opts.PortTries > 0, the first free one of the PortTries ports after it
// (the menu-bar app would rather serve on 8001 than not at all; deltafin
// serve was told its port and tries only that one). Port 0 takes any free
// port. A taken port reads ErrPortInUse, naming the address.
func Listen(ctx context.Context, opts Options) (net.Listener, error) {
	if opts.PortTries < 0 {
		return nil, fmt.Errorf("server: negative port tries %d", opts.PortTries)
	}
	var lc net.ListenConfig
	var first error
	for p := opts.Port; p <= opts.Port+opts.PortTries && p <= 65535; p++ {
		addr := net.JoinHostPort(opts.Host, strconv.Itoa(p))
		ln, err := lc.Listen(ctx, "tcp", addr)
		if err == nil {
			return ln, nil
		}
		inUse := errors.Is(err, syscall.EADDRINUSE)
		if first == nil {
			first = fmt.Errorf("listen on %s: %w", addr, err)
			if inUse {
				who := "another program listens there"
				if model := whoServes(ctx, opts.Host, p); model != "" {
					who = fmt.Sprintf("another Deltafin serves %s there (with another data directory: the same one would have said so)", model)
				}
				first = fmt.Errorf("listen on %s: %w: %s", addr, ErrPortInUse, who)
			}
		}
		if opts.Port == 0 || !inUse {
			break
		}
	}
	return nil, first
}

// whoServes asks host:port's /health, within a second, whether a Deltafin
// serves there, and returns its model ("" when it is not one).
func whoServes(ctx context.Context, host string, port int) string {
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(host, strconv.Itoa(port))+"/health", nil)
	if err != nil {
		return ""
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var h Health
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&h) != nil || h.Status != "ok" {
		return ""
	}
	return h.Model
}

// A Host is a Server answering on a listener, from Start to Shutdown.
type Host struct {
	s           *Server
	ln          net.Listener
	hs          *http.Server
	endRequests context.CancelFunc
	done        chan struct{}
	serveErr    error // set before done closes

	once    sync.Once
	stopErr error
}

// Start resumes the stored jobs and serves on ln in the background until
// Shutdown; ln is the Host's from then on (closed on error too). wrap, if
// not nil, wraps the server's handler (the app watches the generations
// that pass to keep the machine awake and notify). Timeouts come from the
// Options: HeaderTimeout for request headers, BodyTimeout for bodies
// (readBody), IdleTimeout for kept-alive connections; nothing bounds
// writing, since a generation may take hours (a read or write deadline hit
// while a handler runs would cancel its request). A Server starts once:
// its shutdown ends it (the app makes a new one to restart).
func (s *Server) Start(ln net.Listener, wrap func(http.Handler) http.Handler) (*Host, error) {
	if !s.started.CompareAndSwap(false, true) {
		return nil, errors.Join(errors.New("server: started twice (a Server serves once; make another)"), ln.Close())
	}
	if err := s.resume(); err != nil {
		s.stopJobs()
		return nil, errors.Join(err, ln.Close())
	}
	var h http.Handler = s
	if wrap != nil {
		h = wrap(s)
	}
	reqCtx, endRequests := context.WithCancel(context.Background())
	ho := &Host{s: s, ln: ln, endRequests: endRequests, done: make(chan struct{})}
	ho.hs = &http.Server{
		Handler:           h,
		ReadHeaderTimeout: s.opts.HeaderTimeout,
		IdleTimeout:       s.opts.IdleTimeout,
		BaseContext:       func(net.Listener) context.Context { return reqCtx },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	go func() {
		err := ho.hs.Serve(ln)
		if !errors.Is(err, http.ErrServerClosed) {
			ho.serveErr = err
		}
		close(ho.done)
	}()
	return ho, nil
}

// Addr is the address the Host listens on.
func (h *Host) Addr() net.Addr { return h.ln.Addr() }

// Done is closed once the Host no longer accepts connections: after
// Shutdown began, or when the listener failed (Shutdown then says why).
func (h *Host) Done() <-chan struct{} { return h.done }

// Shutdown stops serving, in this order: the server's life ends (running
// and queued jobs stop; stored ones keep their place and tokens and resume
// at the next Start), then every request's context (a generation stops
// within one token; its client reads a 503 with Retry-After, or an error
// event in a stream); the listener closes and open connections drain for
// Options.ShutdownTimeout (or until ctx ends) before they are cut; last it
// waits for the jobs. Calling it again returns the first call's result.
func (h *Host) Shutdown(ctx context.Context) error {
	h.once.Do(func() {
		h.s.stopLife(errShutdown)
		h.endRequests()
		if t := h.s.opts.ShutdownTimeout; t > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, t)
			defer cancel()
		}
		err := h.hs.Shutdown(ctx)
		if err != nil {
			// Drained too slowly: cut what is left (its requests'
			// contexts have ended already).
			err = h.hs.Close()
		}
		<-h.done
		h.s.stopJobs()
		switch {
		case h.serveErr != nil:
			h.stopErr = fmt.Errorf("server: %w", h.serveErr)
		case err != nil:
			h.stopErr = fmt.Errorf("server: shutdown: %w", err)
		}
	})
	return h.stopErr
}

// Serve is Start on ln until ctx ends (or the listener fails), then
// Shutdown.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	h, err := s.Start(ln, nil)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case <-h.Done():
	}
	return h.Shutdown(context.Background())
}
