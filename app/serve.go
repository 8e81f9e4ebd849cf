package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"

	"github.com/deltafin/deltafin/downloader"
	"github.com/deltafin/deltafin/engine"
	"github.com/deltafin/deltafin/engine/tokenizer"
	"github.com/deltafin/deltafin/kernels"
	"github.com/deltafin/deltafin/server"
	"github.com/deltafin/deltafin/store"
)

// ErrNoModel: serve was asked to run without a model directory.
var ErrNoModel = errors.New("app: no model to serve")

// Jobs is how a server keeps its jobs: the store (nil: only while they
// run) and who hears when a response ends.
type Jobs struct {
	Store      *store.Store
	OnResponse func(server.Response)
}

// OpenServer opens the model (with eopts) and the tokenizer in dir and
// returns the OpenAI-compatible server for them, configured from sc, with
// its jobs kept as jobs says, and the function that closes the model once
// the server is done.
func OpenServer(ctx context.Context, sc ServerConfig, dir string, eopts engine.Options, jobs Jobs, log *slog.Logger) (*server.Server, func() error, error) {
	m, err := engine.Open(ctx, dir, eopts)
	if err != nil {
		return nil, nil, fmt.Errorf("app: open model: %w", err)
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		return nil, nil, errors.Join(fmt.Errorf("app: load tokenizer: %w", err), m.Close())
	}
	opts := server.DefaultOptions()
	opts.Host, opts.Port = sc.Host, sc.Port
	opts.MaxTokens, opts.Queue, opts.MemoEntries = sc.MaxTokens, sc.Queue, sc.MemoEntries
	opts.APIKey, opts.CORSOrigins = sc.APIKey, sc.CORSOrigins
	opts.Logger, opts.Store, opts.OnResponse = log, jobs.Store, jobs.OnResponse
	s, err := server.New(opts, server.FromEngine(m), tok)
	if err != nil {
		return nil, nil, errors.Join(err, m.Close())
	}
	log.Info("model", "id", m.Info().ID, "backend", m.Info().Backend, "plan", fmt.Sprint(m.Plan()))
	return s, m.Close, nil
}

// Serve is `deltafin serve`: it serves cfg.Server.ModelDir, or without one
// the installed model (deltafin setup; in a stream install its experts
// arrive on demand), until ctx ends; ready, if not nil, receives the base
// URL once the server listens.
func Serve(ctx context.Context, cfg Config, log *slog.Logger, ready func(baseURL string)) (err error) {
	sc := cfg.Server
	if err := sc.Validate(); err != nil {
		return err
	}
	if !isLoopback(sc.Host) && sc.APIKey == "" {
		log.Warn("the server is reachable from the network without an API key; set --api-key (or DELTAFIN_API_KEY)", "host", sc.Host)
	}
	backend, err := kernels.ByName(cfg.Kernels) // DELTAFIN_KERNELS
	if err != nil {
		return err
	}
	dir, eopts := sc.ModelDir, engine.Options{Backend: backend, NoSpec: !cfg.Spec}
	var fetch engine.Fetcher
	if dir == "" {
		installed := cfg.ModelDir()
		if _, err := os.Stat(filepath.Join(installed, "config.json")); err != nil {
			return fmt.Errorf("%w: no model is installed in %s; run deltafin setup, or pass --model DIR (a directory with config.json, the safetensors shards and tiktoken.model)", ErrNoModel, installed)
		}
		var mirror *downloader.Mirror
		if mirror, err = OpenMirror(ctx, cfg); err != nil {
			return fmt.Errorf("app: open the installed model: %w", err)
		}
		defer func() { err = errors.Join(err, mirror.Close()) }()
		dir, eopts.OpenSource, fetch = mirror.Dir(), MirrorSource(mirror), mirror
	}
	// The streaming setup (RAM budget, heat histogram, --trace) as for
	// deltafin run; it closes after the model.
	st, err := cfg.OpenStream(fetch)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, st.Close()) }()
	eopts.Stream = st.Options
	if cfg.Spine == "int8" {
		eopts.SpineInt8 = engine.SpineInt8Dir(dir)
		log.Warn("spine: int8 copy (approximate: NOT the exact K3 output)", "dir", eopts.SpineInt8)
	}
	// Responses and queued jobs survive restarts in the data directory.
	jobs, err := store.Open(filepath.Join(cfg.DataDir, store.FileName))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, jobs.Close()) }()
	s, closeModel, err := OpenServer(ctx, sc, dir, eopts, Jobs{Store: jobs}, log)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closeModel()) }()
	return s.ListenAndServe(ctx, func(a net.Addr) {
		url := "http://" + a.String()
		log.Info("serving", "model", s.ModelID(), "base_url", url+"/v1")
		if ready != nil {
			ready(url)
		}
	})
}

// isLoopback reports whether host only listens on this machine.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
