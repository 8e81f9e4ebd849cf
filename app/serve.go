package app

import (
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/deltafin/deltafin/server"
)

// ErrNoModel: serve was asked to run without a model directory.
var ErrNoModel = errors.New("app: no model to serve")

// NewServer returns the OpenAI-compatible server for m, configured from sc.
// m stays the caller's to close once the server is done.
func NewServer(sc ServerConfig, m *Model, log *slog.Logger) (*server.Server, error) {
	if m.Tokenizer == nil {
		return nil, fmt.Errorf("app: the server needs the model's tokenizer (tiktoken.model in %s)", m.Dir)
	}
	opts := server.DefaultOptions()
	opts.Host, opts.Port = sc.Host, sc.Port
	opts.MaxTokens, opts.Queue, opts.MemoEntries = sc.MaxTokens, sc.Queue, sc.MemoEntries
	opts.APIKey, opts.CORSOrigins = sc.APIKey, sc.CORSOrigins
	opts.Logger = log
	s, err := server.New(opts, m.Model, m.Tokenizer)
	if err != nil {
		return nil, err
	}
	if m.Approximate != "" {
		log.Warn(m.Approximate)
	}
	log.Info("model", "id", m.Info().ID, "backend", m.Info().Backend, "plan", fmt.Sprint(m.Plan()))
	return s, nil
}

// IsLoopback reports whether host only listens on this machine.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
