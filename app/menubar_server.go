package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/deltafin/deltafin/server"
	"github.com/deltafin/deltafin/store"
	"github.com/deltafin/deltafin/web"
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
	// model wraps the engine for the server (Jobs.Model); nil in the
	// product, a gate in tests.
	model func(server.Model) server.Model

	mu       sync.Mutex
	control  web.Control // the App, for the web page
	token    string      // the page's same-origin token, kept across restarts
	busy     func(reason string) func()
	finished func(time.Duration, string)
	host     *server.Host
	srv      *server.Server
	close    func() error // the model and the store, after the host
	// recovered is what the last start found of a damaged job store.
	recovered *store.Recovery
}

// StoreRecovered says, once per damaged store, that the last Start found
// the job store damaged and what it saved (nil: it was sound).
func (s *apiServer) StoreRecovered() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.recovered
	s.recovered = nil
	if r == nil {
		return nil
	}
	return errors.New(r.String())
}

// ReportGenerations receives the App's keep-awake and long-answer
// notification (GenerationReporter).
func (s *apiServer) ReportGenerations(busy func(reason string) func(), finished func(time.Duration, string)) {
	s.mu.Lock()
	s.busy, s.finished = busy, finished
	s.mu.Unlock()
}

// ServePage receives the App behind the web page (PageReporter).
func (s *apiServer) ServePage(c web.Control) {
	s.mu.Lock()
	s.control = c
	s.mu.Unlock()
}

// SetConfig sets the server's settings for its next Start (the page's
// /settings).
func (s *apiServer) SetConfig(sc ServerConfig) {
	s.mu.Lock()
	s.cfg.Server = sc
	s.mu.Unlock()
}

func (s *apiServer) Start(ctx context.Context, demo bool) (addr string, err error) {
	// The demo keeps its own heat histogram, apart from the real model's.
	s.mu.Lock()
	if s.token == "" {
		if s.token, err = web.NewToken(); err != nil {
			s.mu.Unlock()
			return "", err
		}
	}
	cfg, ref, control, token := s.cfg, ModelRef{NeedTokenizer: true, Log: s.log}, s.control, s.token
	s.mu.Unlock()
	if demo {
		if s.demo == nil {
			return "", fmt.Errorf("%w: nothing is installed and this build has no demo model", ErrNoModel)
		}
		cfg.DataDir = DemoDir(cfg)
		if err := InstallDemo(s.demo, cfg.DataDir); err != nil {
			return "", err
		}
		ref.Dir, cfg.Server.Demo = cfg.DataDir, true
	} else {
		if ref.Mirror, err = s.mi.mirror(ctx); err != nil {
			return "", err
		}
		ref.Dir = s.mi.dir()
	}
	m, err := OpenModel(ctx, cfg, ref)
	if err != nil {
		return "", err
	}
	// Background responses and queued jobs outlive a quit: they resume at
	// the next start from the data directory's store.
	jobs, err := OpenStore(cfg)
	if err != nil {
		return "", errors.Join(err, m.Close())
	}
	srv, err := NewServer(cfg.Server, m, Jobs{Store: jobs, OnResponse: s.responseDone, Control: control, PageToken: token, Model: s.model}, s.log)
	if err != nil {
		return "", errors.Join(err, m.Close(), jobs.Close())
	}
	closeAll := func() error { return errors.Join(m.Close(), jobs.Close()) }
	opts := ServerOptions(cfg.Server)
	opts.PortTries = portTries
	ln, err := server.Listen(ctx, opts)
	if err != nil {
		return "", errors.Join(err, closeAll())
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
	host, err := srv.Start(ln, func(h http.Handler) http.Handler { return watchGenerations(h, busy, finished) })
	if err != nil {
		return "", errors.Join(err, closeAll())
	}
	s.host, s.close, s.srv, s.recovered = host, closeAll, srv, jobs.Recovered()
	return "http://" + PasteableAddr(host.Addr()), nil
}

func (s *apiServer) Stop(ctx context.Context) error {
	s.mu.Lock()
	host, closeAll := s.host, s.close
	s.host, s.close, s.srv = nil, nil, nil
	s.mu.Unlock()
	if host == nil {
		return nil
	}
	// Stored jobs keep their place and tokens and resume at the next
	// start; quitting asks nothing and loses nothing.
	return errors.Join(host.Shutdown(ctx), closeAll())
}

// responseDone sends the long-answer notification when a response ends
// (watchGenerations sees only chat, completions and messages; a background response
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
	reasoning, answer := r.Texts()
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

// portTries is how many ports after the configured one the app tries when
// it is taken (by another program: a second Deltafin is stopped earlier by
// the instance lock).
const portTries = 20
