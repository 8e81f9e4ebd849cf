package engine

import (
	"context"
	"errors"
	"time"
)

// GenerateOptions controls one Generate call.
type GenerateOptions struct {
	// MaxNew bounds the generated tokens (≥ 1).
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
	if opts.MaxNew < 1 {
		opts.MaxNew = 1
	}
	stop := make(map[int]bool, len(opts.StopTokens))
	for _, t := range opts.StopTokens {
		stop[t] = true
	}
	start := time.Now()
	rows, err := s.Forward(ctx, prompt, opts.Logits != nil)
	if err != nil {
		return res, err
	}
	res.Prefill = time.Since(start)
	for _, r := range rows {
		if opts.Logits != nil {
			if err := opts.Logits(r); err != nil {
				return res, err
			}
		}
	}
	last := rows[len(rows)-1]
	start = time.Now()
	for {
		tok := argmax(last)
		// The token is part of the conversation whether or not we go on.
		s.pending = append(s.pending, tok)
		if stop[tok] {
			res.FinishReason = "stop"
			res.Decode = time.Since(start)
			return res, nil
		}
		if err := emit(tok); err != nil {
			res.Decode = time.Since(start)
			if errors.Is(err, ErrStopped) {
				res.Tokens++
				res.FinishReason = "stop"
				return res, nil
			}
			return res, err
		}
		res.Tokens++
		if res.Tokens >= opts.MaxNew {
			res.FinishReason = "length"
			res.Decode = time.Since(start)
			return res, nil
		}
		step, err := s.Forward(ctx, nil, false)
		if err != nil {
			return res, err
		}
		last = step[0]
		if opts.Logits != nil {
			if err := opts.Logits(last); err != nil {
				return res, err
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
