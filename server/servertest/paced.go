package servertest

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"

	"github.com/deltafin/deltafin/engine"
	"github.com/deltafin/deltafin/server"
)

// Paced is a scripted K3: every generation emits Tokens (stopping early at
// a stop token or at MaxNew, as the engine does), one at a time, each
// once the test sends on Step; after the server has taken a token it is
// announced on Took. Its sessions leave on their context's end.
type Paced struct {
	info   engine.Info
	tokens []int
	Step   chan struct{}
	Took   chan struct{}
	runs   atomic.Int64
}

// Generations counts the generations that reached the model.
func (m *Paced) Generations() int { return int(m.runs.Load()) }

// NewPaced is a Paced model describing itself as info, emitting tokens.
func NewPaced(info engine.Info, tokens []int) *Paced {
	return &Paced{info: info, tokens: slices.Clone(tokens), Step: make(chan struct{}), Took: make(chan struct{})}
}

// Advance lets n tokens through and waits until the server has taken each.
func (m *Paced) Advance(n int) {
	for range n {
		m.Step <- struct{}{}
		<-m.Took
	}
}

// Run lets every token through until ctx ends: the rest of the answers.
func (m *Paced) Run(ctx context.Context) {
	for {
		select {
		case m.Step <- struct{}{}:
			<-m.Took
		case <-ctx.Done():
			return
		}
	}
}

// Info is the model's description.
func (m *Paced) Info() engine.Info { return m.info }

// NewSession opens a conversation.
func (m *Paced) NewSession() server.Session { return &pacedSession{m: m} }

type pacedSession struct {
	m    *Paced
	hist []int
}

func (s *pacedSession) Generate(ctx context.Context, prompt []int, opts engine.GenerateOptions, emit func(int) error) (engine.Result, error) {
	s.m.runs.Add(1)
	s.hist = append(s.hist, prompt...)
	res := engine.Result{PromptTokens: len(prompt), FinishReason: "length"}
	for _, tok := range s.m.tokens {
		if res.Tokens == opts.MaxNew {
			return res, nil
		}
		if slices.Contains(opts.StopTokens, tok) {
			res.FinishReason = "stop"
			return res, nil
		}
		select {
		case <-s.m.Step:
		case <-ctx.Done():
			return res, ctx.Err()
		}
		s.hist = append(s.hist, tok)
		err := emit(tok)
		res.Tokens++
		select {
		case s.m.Took <- struct{}{}:
		case <-ctx.Done():
			return res, ctx.Err()
		}
		if errors.Is(err, engine.ErrStopped) {
			res.FinishReason = "stop"
			return res, nil
		} else if err != nil {
			return res, err
		}
	}
	return res, nil
}

func (s *pacedSession) Tokens() []int { return slices.Clone(s.hist) }
func (s *pacedSession) Usable() bool  { return true }
