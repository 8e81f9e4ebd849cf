package app

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"

	"github.com/deltafin/deltafin/server"
	"github.com/deltafin/deltafin/store"
	"github.com/deltafin/deltafin/web"
)

// ErrNoModel: serve was asked to run without a model directory.
var ErrNoModel = errors.New("app: no model to serve")

// Jobs is how a server keeps its jobs: the store (nil: only while they
// run) and who hears when a response ends; and the menu-bar app behind the
// web page (nil under deltafin serve).
type Jobs struct {
	Store      *store.Store
	OnResponse func(server.Response)
	Control    web.Control
	// PageToken is the web page's same-origin token, kept across server
	// restarts ("" picks one per server).
	PageToken string
	// Flags are deltafin serve's settings in force, which its /settings
	// lists (nil in the app, whose Control has them).
	Flags []web.Flag
	// Model wraps the engine as the server sees it (nil: as it is). Tests
	// gate the real engine through it; the product leaves it nil.
	Model func(server.Model) server.Model
}

// OpenStore opens the job store in cfg's data directory: background
// responses and queued jobs outlive a quit, a kill -9 or a reboot there and
// resume at the next start. The caller closes it after the server.
func OpenStore(cfg Config) (*store.Store, error) {
	return store.Open(filepath.Join(cfg.DataDir, store.FileName))
}

// NewServer returns the OpenAI-compatible server for m, configured from sc,
// with its jobs kept as jobs says, and the web page (package web) mounted
// on it: the same port, the same Host check. m and jobs.Store stay the caller's to
// close once the server is done.
func NewServer(sc ServerConfig, m *Model, jobs Jobs, log *slog.Logger) (*server.Server, error) {
	if m.Tokenizer == nil {
		return nil, fmt.Errorf("app: the server needs the model's tokenizer (tiktoken.model in %s)", m.Dir)
	}
	opts := ServerOptions(sc)
	opts.Logger, opts.Store, opts.OnResponse = log, jobs.Store, jobs.OnResponse
	var model server.Model = server.FromEngine(m.Model)
	if jobs.Model != nil {
		model = jobs.Model(model)
	}
	s, err := server.New(opts, model, m.Tokenizer)
	if err != nil {
		return nil, err
	}
	page, err := web.New(web.Options{Server: s, Store: jobs.Store, APIKey: sc.APIKey, Engine: m.Model, Demo: sc.Demo,
		Control: jobs.Control, Token: jobs.PageToken, Flags: jobs.Flags, Log: log})
	if err != nil {
		return nil, err
	}
	s.Mount(page.Mount)
	if m.Approximate != "" {
		log.Warn(m.Approximate)
	}
	log.Info("model", "id", m.Info().ID, "backend", m.Info().Backend, "plan", fmt.Sprint(m.Plan()))
	if w := m.Plan().SpineWarning(); w != "" {
		log.Warn(w)
	}
	m.WatchMemory(log)
	return s, nil
}

// ServerOptions are the server's options from sc: its address (Listen it
// with server.Listen), limits, key and CORS, and the id the model is
// served under.
func ServerOptions(sc ServerConfig) server.Options {
	opts := server.DefaultOptions()
	opts.Host, opts.Port = sc.Host, sc.Port
	opts.MaxTokens, opts.Queue, opts.MemoEntries = sc.MaxTokens, sc.Queue, sc.MemoEntries
	opts.APIKey, opts.CORSOrigins = sc.APIKey, sc.CORSOrigins
	switch {
	case sc.Demo:
		opts.ModelID, opts.ModelDescription = DemoModelID, "the demo model: random weights, its answers are gibberish; run deltafin setup for Kimi K3"
	case sc.ModelDir != "":
		opts.ModelID = CheckpointName(sc.ModelDir)
	}
	return opts
}

// CheckpointName is the name a checkpoint directory given by hand
// (--model DIR) is served under: the directory's own name, as its
// publisher named it (Kimi-K3, k3-tiny), not the fixed id of the
// installed model, so that clients listing /v1/models see which
// checkpoint answers.
func CheckpointName(dir string) string {
	name := filepath.Base(filepath.Clean(dir))
	if name == "." || name == string(filepath.Separator) {
		return "" // the engine's own id
	}
	return name
}

// DemoModelID is the id the built-in demo model is served under, so no
// client mistakes it for K3.
const DemoModelID = "deltafin-demo"

// IsLoopback reports whether host only listens on this machine.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
