package engine

import (
	"context"
	"errors"
	"time"
)

// GenerateOptions controls one Generate call.
type GenerateOptions struct {
	// MaxNew bounds the generated tokens; at least one is always generated.
	MaxNew int
	// StopTokens end the turn; the stop token is not emitted (it stays in
	// the session's history). Nil means a raw completion that runs to MaxNew.
	StopTokens []int
	// Logits, when set, receives every logits row computed: one per prompt
	// position, then the row that chose each generated token after the
	// first. Rows are only valid during the call.
	Logits func(row []float32) error
}

// Result summarises one Generate call.
type Result struct {
	PromptTokens int
	Tokens       int    // generated tokens emitted
	FinishReason string // "stop" or "length"
	Prefill      time.Duration
	Decode       time.Duration
}

// Generate appends prompt to the conversation and decodes greedily,
// calling emit with each new token. emit returning an error stops
// generation at once: ErrStopped ends it cleanly (FinishReason "stop"), any
// other error is returned.
func (s *Session) Generate(ctx context.Context, prompt []int, opts GenerateOptions, emit func(tok int) error) (Result, error) {
	res := Result{PromptTokens: len(prompt)}
	start := time.Now()
	// Every prompt row is only computed when asked for (lm_head per position).
	rows, err := s.Forward(ctx, prompt, opts.Logits != nil && len(prompt) > 0)
	if err != nil {
		return res, err
	}
	res.Prefill = time.Since(start)
	if opts.Logits != nil {
		for _, r := range rows {
			if err := opts.Logits(r); err != nil {
				return res, err
			}
		}
	}
	start = time.Now()
	res.FinishReason, err = s.decode(ctx, rows[len(rows)-1], opts, emit, &res.Tokens)
	res.Decode = time.Since(start)
	return res, err
}

// decode picks tokens greedily from last onwards and returns the finish
// reason; n counts the emitted tokens.
func (s *Session) decode(ctx context.Context, last []float32, opts GenerateOptions, emit func(int) error, n *int) (string, error) {
	stop := make(map[int]bool, len(opts.StopTokens))
	for _, t := range opts.StopTokens {
		stop[t] = true
	}
	ctxLen := s.m.cfg.ContextLen
	for {
		tok := argmax(last)
		// The token is part of the conversation whether or not we go on; it
		// runs at the start of the next pass.
		s.pending = append(s.pending, tok)
		if stop[tok] {
			return "stop", nil
		}
		if err := emit(tok); err != nil {
			if errors.Is(err, ErrStopped) {
				*n++
				return "stop", nil
			}
			return "", err
		}
		*n++
		if *n >= opts.MaxNew || (ctxLen > 0 && s.Len() >= ctxLen) {
			return "length", nil
		}
		step, err := s.Forward(ctx, nil, false)
		if err != nil {
			return "", err
		}
		last = step[0]
		if opts.Logits != nil {
			if err := opts.Logits(last); err != nil {
				return "", err
			}
		}
	}
}

// argmax returns the index of the largest value, the first on ties.
func argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}
