package server

import (
	"context"
	"errors"
	"slices"

	"github.com/deltafin/deltafin/engine"
)

// scripted is a Model without the engine, for what the real engine cannot
// show on cue: each Generate announces its prompt on started, then waits
// for a turn on proceed (or its ctx) before emitting its tokens, so a test
// decides when each generation runs and sees the order they ran in.
type scripted struct {
	info    engine.Info
	tokens  []int // what every generation emits
	started chan []int
	proceed chan struct{}
}

func newScripted(tokens ...int) *scripted {
	return &scripted{
		info:    engine.Info{ID: tinyID, VocabSize: 1024, ContextLen: 1 << 16},
		tokens:  tokens,
		started: make(chan []int, 64),
		proceed: make(chan struct{}),
	}
}

func (m *scripted) Info() engine.Info   { return m.info }
func (m *scripted) NewSession() Session { return &scriptedSession{m: m} }

type scriptedSession struct {
	m    *scripted
	hist []int
	torn bool
}

func (s *scriptedSession) Generate(ctx context.Context, prompt []int, opts engine.GenerateOptions, emit func(int) error) (engine.Result, error) {
	s.m.started <- slices.Clone(prompt)
	res := engine.Result{PromptTokens: len(prompt), FinishReason: "length"}
	select {
	case <-s.m.proceed:
	case <-ctx.Done():
		s.torn = true
		return res, ctx.Err()
	}
	s.hist = append(s.hist, prompt...)
	for _, tok := range s.m.tokens {
		if res.Tokens == opts.MaxNew {
			return res, nil
		}
		s.hist = append(s.hist, tok)
		if slices.Contains(opts.StopTokens, tok) {
			res.FinishReason = "stop"
			return res, nil
		}
		if err := emit(tok); errors.Is(err, engine.ErrStopped) {
			res.FinishReason = "stop" // as the engine ends a stopped generation
			return res, nil
		} else if err != nil {
			return res, err
		}
		res.Tokens++
	}
	return res, nil
}

func (s *scriptedSession) Tokens() []int { return slices.Clone(s.hist) }
func (s *scriptedSession) Usable() bool  { return !s.torn }
