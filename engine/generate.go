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
	// Spec is this call's decode passes, drafts and bytes read.
	Spec SpecStats
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
	before := s.spec
	res.FinishReason, err = s.decode(ctx, rows[len(rows)-1], opts, emit, &res.Tokens)
	res.Decode = time.Since(start)
	res.Spec = s.spec.Sub(before)
	return res, err
}

// decode picks tokens from last onwards and returns the finish reason; n
// counts the emitted tokens. A verify pass may yield several tokens; the
// tokens, the logits rows handed to opts.Logits and their order are those
// of one token per pass. A draft is kept only when it is the token picked
// from the row before it at its own position (the same key as without
// drafting), so sampling stays lossless too; a turn that ends inside the
// kept drafts (emit's ErrStopped) leaves the session as one token per pass
// would have.
func (s *Session) decode(ctx context.Context, last []float32, opts GenerateOptions, emit func(int) error, n *int) (string, error) {
	stop := make(map[int]bool, len(opts.StopTokens))
	for _, t := range opts.StopTokens {
		stop[t] = true
	}
	ctxLen := s.m.cfg.ContextLen
	// take handles one chosen token; ran says it has already run through
	// the model (a kept draft), else it becomes the pending token.
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
	pick := func(pos int, row []float32) int { return z.pick(row, pos) }
	// tok is the token at index s.Len(): picked before take appends it.
	tok := z.pick(last, s.Len())
	for {
		if fin, err := take(tok, false); fin != "" || err != nil {
			return fin, err
		}
		before := s.readCounters()
		drafts, err := s.drafts(ctx, stop, opts.MaxNew-*n, ctxLen)
		if err != nil {
			return "", err
		}
		if len(drafts) == 0 {
			step, err := s.Forward(ctx, nil, false)
			if err != nil {
				return "", err
			}
			s.spec.Steps++
			s.account(before, 1, 0)
			last = step[0]
			if err := logits(last); err != nil {
				return "", err
			}
			tok = z.pick(last, s.Len())
			continue
		}
		rows, picks, err := s.verify(ctx, drafts, pick)
		if err != nil {
			return "", err
		}
		kept := len(rows) - 1 // drafts accepted: rows[j] picked drafts[j]
		s.keep(kept + 1)
		s.spec.Passes++
		s.spec.Drafted += len(drafts)
		s.spec.Accepted += kept
		s.account(before, 1+len(drafts), kept)
		for j := range kept {
			if err := logits(rows[j]); err != nil {
				return "", err
			}
			if fin, err := take(drafts[j], true); fin != "" || err != nil {
				// The turn ends at drafts[j]: as one token per pass, it
				// is pending and the drafts after it never ran.
				s.keep(j + 1)
				s.pending = append(s.pending, drafts[j])
				s.hist = append(s.hist, drafts[j])
				return fin, err
			}
		}
		if err := logits(rows[kept]); err != nil {
			return "", err
		}
		tok = picks[kept]
	}
}

// drafts are the tokens to verify after the pending one this pass: as many
// as the pricing says pay (price.go), n-gram guesses first, the drafter's
// after them, cut before any stop token (a turn's last token stays
// pending, as without drafting, so the next turn's pass is the same) and
// within the turn's and the context's room.
func (s *Session) drafts(ctx context.Context, stop map[int]bool, left, ctxLen int) ([]int, error) {
	if len(s.pending) != 1 || (s.m.noSpec && s.dr == nil) {
		return nil, nil
	}
	maxK := min(draftMax, left-1)
	if ctxLen > 0 {
		maxK = min(maxK, ctxLen-s.Len()-2)
	}
	k := s.price.depth(maxK)
	if k < 1 {
		return nil, nil
	}
	var d []int
	if !s.m.noSpec {
		d = ngram(s.hist, k)
	}
	if len(d) < k && s.dr != nil {
		s.settle()
		more, err := s.dr.propose(ctx, append(s.pending[:1:1], d...), k-len(d))
		if err != nil {
			return nil, err
		}
		d = append(d, more...)
	}
	d = d[:min(len(d), k)]
	for i, t := range d {
		if t < 0 || t >= s.m.cfg.Vocab || stop[t] {
			return d[:i], nil
		}
	}
	return d, nil
}

// passCounters are the store's counters a pass is priced by.
type passCounters struct{ demanded, expertBytes, spineBytes int64 }

// readCounters reads them (zero for a model with nothing streamed).
func (s *Session) readCounters() passCounters {
	if !s.price.streamed {
		return passCounters{}
	}
	st := s.m.Stats()
	return passCounters{st.Demanded(), st.ExpertBytes, st.SpineBytes}
}

// account books a decode pass of T positions that kept accepted drafts:
// the bytes it read (the store's counters since before) and the pricing's
// estimates. The counters are the model's, so passes of other sessions
// running at the same time are counted too.
func (s *Session) account(before passCounters, T, accepted int) {
	after := s.readCounters()
	d := passCounters{after.demanded - before.demanded, after.expertBytes - before.expertBytes, after.spineBytes - before.spineBytes}
	s.spec.Bytes += d.expertBytes + d.spineBytes
	s.price.record(T, accepted, d.demanded, d.expertBytes, d.spineBytes)
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
