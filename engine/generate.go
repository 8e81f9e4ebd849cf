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
	// Sampling picks each token (sample.go); the zero value is greedy.
	// The token at conversation index p draws the uniform keyed by
	// (Sampling.Seed, p), so a seed gives the same tokens with and without
	// speculation, and when a conversation is run again from any prefix.
	Sampling Sampling
}

// Result summarises one Generate call.
type Result struct {
	PromptTokens int
	Tokens       int    // generated tokens emitted
	FinishReason string // "stop" or "length"
	Prefill      time.Duration
	Decode       time.Duration
}

// Generate appends prompt to the conversation and decodes with
// opts.Sampling (greedy by default), calling emit with each new token.
// emit returning an error stops generation at once: ErrStopped ends it
// cleanly (FinishReason "stop"), any other error is returned.
func (s *Session) Generate(ctx context.Context, prompt []int, opts GenerateOptions, emit func(tok int) error) (Result, error) {
	res := Result{PromptTokens: len(prompt)}
	if err := opts.Sampling.Check(); err != nil {
		return res, err
	}
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

// decode picks tokens from last onwards and returns the finish reason; n
// counts the emitted tokens. With speculation a pass may yield two tokens;
// the tokens, the logits rows handed to opts.Logits and their order are
// those of one token per pass. A guess is kept only when it is the token
// picked from the verify pass's first row at its own position (the same
// key as without speculation), so sampling stays lossless too.
func (s *Session) decode(ctx context.Context, last []float32, opts GenerateOptions, emit func(int) error, n *int) (string, error) {
	stop := make(map[int]bool, len(opts.StopTokens))
	for _, t := range opts.StopTokens {
		stop[t] = true
	}
	ctxLen := s.m.cfg.ContextLen
	// take handles one chosen token; ran says it has already run through
	// the model (an accepted guess), else it becomes the pending token.
	take := func(tok int, ran bool) (string, error) {
		if !ran {
			// The token is part of the conversation whether or not we go
			// on; it runs at the start of the next pass.
			s.pending = append(s.pending, tok)
			s.hist = append(s.hist, tok)
		}
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
		return "", nil
	}
	logits := func(row []float32) error {
		if opts.Logits == nil {
			return nil
		}
		return opts.Logits(row)
	}
	z := &sampler{opts: opts.Sampling}
	// tok is the token at index s.Len(): picked before take appends it.
	tok := z.pick(last, s.Len())
	for {
		if fin, err := take(tok, false); fin != "" || err != nil {
			return fin, err
		}
		if guess, ok := s.guess(stop, opts.MaxNew-*n, ctxLen); ok {
			at := s.Len() // the guess's index
			rows, err := s.verify(ctx, guess, func(row []float32) int {
				tok = z.pick(row, at)
				return tok
			})
			if err != nil {
				return "", err
			}
			s.spec.Passes++
			if err := logits(rows[0]); err != nil {
				return "", err
			}
			if len(rows) < 2 { // tok, picked from rows[0], is not the guess
				s.rewind()
				continue
			}
			s.spec.Accepted++
			if fin, err := take(guess, true); fin != "" || err != nil {
				return fin, err
			}
			last = rows[1]
		} else {
			step, err := s.Forward(ctx, nil, false)
			if err != nil {
				return "", err
			}
			s.spec.Steps++
			last = step[0]
		}
		if err := logits(last); err != nil {
			return "", err
		}
		tok = z.pick(last, s.Len())
	}
}

// guess drafts the token after the pending one when a two-token pass is
// worth running: speculation on, room for two more tokens, and a guess that
// would not end the turn (a turn's last token stays pending, as without
// speculation, so the next turn's pass is the same).
func (s *Session) guess(stop map[int]bool, left, ctxLen int) (int, bool) {
	if s.m.noSpec || left < 2 || len(s.pending) != 1 || (ctxLen > 0 && s.Len()+2 >= ctxLen) {
		return 0, false
	}
	g, ok := draft(s.hist)
	if !ok || stop[g] {
		return 0, false
	}
	return g, true
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
