package server

import (
	"context"

	"github.com/deltafin/deltafin/engine"
)

// The server's whole view of the engine: a model that describes itself and
// opens sessions, and a session that generates. Defined here, by the one
// that uses it, so the server can be tested against a scripted model (the
// queue's ordering, a cancellation's timing) as well as against the real
// engine on the tiny checkpoints.

// Model is what the server needs of an *engine.Model (FromEngine adapts
// one).
type Model interface {
	Info() engine.Info
	NewSession() Session
}

// Session is one conversation on the model (an *engine.Session).
type Session interface {
	// Generate appends prompt and decodes (greedily or sampled, as
	// opts.Sampling says), calling emit with each new token
	// (engine.Session.Generate).
	Generate(ctx context.Context, prompt []int, opts engine.GenerateOptions, emit func(tok int) error) (engine.Result, error)
	// Tokens is the conversation so far, prompts and generated tokens.
	Tokens() []int
	// Usable is false once an interrupted pass has torn the session.
	Usable() bool
}

// FromEngine adapts an opened engine model.
func FromEngine(m *engine.Model) Model { return engineModel{m} }

type engineModel struct{ m *engine.Model }

func (e engineModel) Info() engine.Info   { return e.m.Info() }
func (e engineModel) NewSession() Session { return e.m.NewSession() }
