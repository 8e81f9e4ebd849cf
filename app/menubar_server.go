package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/deltafin/deltafin/engine"
	"github.com/deltafin/deltafin/kernels"
	"github.com/deltafin/deltafin/server"
	"github.com/deltafin/deltafin/store"
)

// apiServer is the menu's Server: the engine and the OpenAI-compatible
// server in this process, on the installed model (read through the menu's
// mirror, so a stream install fetches missing experts on demand) or on the
// built-in demo model.
type apiServer struct {
	cfg  Config
	mi   *mirrorInstall
	demo fs.FS
	log  *slog.Logger

	mu       sync.Mutex
	busy     func(reason string) func()
	finished func(time.Duration, string)
	hs       *http.Server
	srv      *server.Server
	done     chan error
	close    func() error
}

// ReportGenerations receives the App's keep-awake and long-answer
// notification (GenerationReporter).
func (s *apiServer) ReportGenerations(busy func(reason string) func(), finished func(time.Duration, string)) {
	s.mu.Lock()
	s.busy, s.finished = busy, finished
	s.mu.Unlock()
}

func (s *apiServer) Start(ctx context.Context, demo bool) (addr string, err error) {
	backend, err := kernels.ByName(s.cfg.Kernels)
	if err != nil {
		return "", err
	}
	eopts := engine.Options{Backend: backend}
	var fetch engine.Fetcher
	scfg := s.cfg
	if demo {
		if s.demo == nil {
			return "", fmt.Errorf("%w: nothing is installed and this build has no demo model", ErrNoModel)
		}
		// The demo keeps its own heat histogram, apart from the real model's.
		scfg.DataDir = filepath.Join(s.cfg.DataDir, "demo-k3-tiny")
		if err := InstallDemo(s.demo, scfg.DataDir); err != nil {
			return "", err
		}
	} else {
		m, err := s.mi.mirror(ctx)
		if err != nil {
			return "", err
		}
		eopts.OpenSource, fetch = MirrorSource(m), m
	}
	dir := scfg.DataDir
	if !demo {
		dir = s.mi.dir()
	}
	st, err := scfg.OpenStream(fetch)
	if err != nil {
		return "", err
	}
	eopts.Stream = st.Options
	// Background responses and queued jobs outlive a quit: they resume at
	// the next start from the data directory's store.
	jobs, err := store.Open(filepath.Join(scfg.DataDir, store.FileName))
	if err != nil {
		return "", errors.Join(err, st.Close())
	}
	srv, closeModel, err := OpenServer(ctx, s.cfg.Server, dir, eopts, Jobs{Store: jobs, OnResponse: s.responseDone}, s.log)
	if err != nil {
		return "", errors.Join(err, jobs.Close(), st.Close())
	}
	if err := srv.Resume(); err != nil {
		return "", errors.Join(err, closeModel(), jobs.Close(), st.Close())
	}
	closeAll := func() error {
		srv.Close() // running jobs stop with their tokens stored
		return errors.Join(closeModel(), jobs.Close(), st.Close())
	}
	host, port := s.cfg.Server.Host, strconv.Itoa(s.cfg.Server.Port)
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", net.JoinHostPort(host, port))
	if err != nil {
		return "", errors.Join(fmt.Errorf("app: listen: %w", err), closeAll())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	busy, finished := s.busy, s.finished
	if busy == nil {
		busy = func(string) func() { return func() {} }
	}
	if finished == nil {
		finished = func(time.Duration, string) {}
	}
	// As server.Serve: a header timeout, and no read or write timeout,
	// which would cut a long generation.
	s.hs = &http.Server{Handler: watchGenerations(srv, busy, finished), ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout: 2 * time.Minute, ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	s.done, s.close, s.srv = make(chan error, 1), closeAll, srv
	go func(hs *http.Server, done chan error) { done <- hs.Serve(ln) }(s.hs, s.done)
	return "http://" + ln.Addr().String(), nil
}

func (s *apiServer) Stop(ctx context.Context) error {
	s.mu.Lock()
	hs, done, closeAll, srv := s.hs, s.done, s.close, s.srv
	s.hs, s.done, s.close, s.srv = nil, nil, nil, nil
	s.mu.Unlock()
	if hs == nil {
		return nil
	}
	// Jobs first: stored ones keep their place and tokens and resume at
	// the next start; quitting asks nothing and loses nothing.
	srv.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := hs.Shutdown(ctx)
	if err != nil {
		// Generations in flight end when their connections close.
		err = errors.Join(err, hs.Close())
	}
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return errors.Join(err, closeAll())
}

// responseDone sends the long-answer notification when a response ends
// (watchGenerations sees only chat and completions; a background response
// has no client at all, so the notification is where its end shows).
func (s *apiServer) responseDone(r server.Response) {
	if r.Status == "cancelled" {
		return // someone stopped it: nothing to announce
	}
	s.mu.Lock()
	finished := s.finished
	s.mu.Unlock()
	if finished == nil {
		return
	}
	var answer, reasoning string
	for _, it := range r.Output {
		for _, p := range it.Content {
			if it.Type == "message" {
				answer += p.Text
			} else {
				reasoning += p.Text
			}
		}
	}
	if answer == "" {
		answer = reasoning // cut off while thinking: its first words say what it was about
	}
	finished(time.Since(time.Unix(r.CreatedAt, 0)), answer)
}

// Queue is the server's job queue right now (what runs, what waits), for
// the menu; ok is false while the server is stopped.
func (s *apiServer) Queue() (q server.QueueStatus, ok bool) {
	s.mu.Lock()
	srv := s.srv
	s.mu.Unlock()
	if srv == nil {
		return q, false
	}
	return srv.Queue(), true
}
