package engine

import (
	"context"
	"fmt"
)

// Session is one conversation's state: the KDA conv and recurrent states,
// the MLA caches and the position. A session is not safe for concurrent use.
type Session struct {
	m   *Model
	pos int         // tokens run through the model so far
	kda []*kdaState // per layer; nil for MLA layers
	mla []*mlaCache // per layer; nil for KDA layers
	// pending holds tokens that belong to the conversation but have not been
	// run yet: the last generated token (its logits were never needed).
	pending []int
	// broken is set when a pass failed midway and left the caches torn.
	broken error
	// hist is every token of the conversation, pending ones included: the
	// text n-gram speculation searches (spec.go).
	hist      []int
	verifying bool        // the current pass is a verify pass (verify.go)
	vp        *verifyPass // the last verify pass, until the next pass
	spec      SpecStats
	// dr drafts beyond n-gram speculation (draft.go), or nil; tapBuf holds
	// the last pass's hidden states at its taps, [T, H] each.
	dr     drafter
	tapBuf [][]float32
	price  draftPrice // how many tokens to draft per pass (price.go)
}

// NewSession returns an empty session.
func (m *Model) NewSession() *Session {
	s := &Session{m: m, kda: make([]*kdaState, m.cfg.Layers), mla: make([]*mlaCache, m.cfg.Layers)}
	for i, k := range m.cfg.Kinds {
		if k == layerKDA {
			s.kda[i] = newKDAState(m.cfg)
		} else {
			s.mla[i] = &mlaCache{}
		}
	}
	if m.draft.src != nil {
		s.dr = m.draft.src.newDrafter(m)
	}
	s.price = newDraftPrice(m)
	return s
}

// SetDraft makes d this session's drafter in place of the model's
// (Options.Draft); the zero Draft drafts with n-gram speculation alone. It
// must be set before the session's first pass: a drafter observes every
// position.
func (s *Session) SetDraft(d Draft) error {
	if s.Len() > 0 {
		return fmt.Errorf("a drafter set after the session's first token: %w", ErrDraft)
	}
	s.dr = nil
	if d.src != nil {
		s.dr = d.src.newDrafter(s.m)
	}
	return nil
}

// Len returns the number of tokens in the conversation, pending ones included.
func (s *Session) Len() int { return s.pos + len(s.pending) }

// Tokens returns a copy of the conversation's tokens, pending ones included:
// every prompt given and every token generated (a turn's stop token too).
// A later Generate whose prompt continues these ids continues the same
// conversation (the server's conversation reuse).
func (s *Session) Tokens() []int { return append([]int(nil), s.hist...) }

// Usable reports whether the session can run another pass (not torn by an
// interrupted one).
func (s *Session) Usable() bool { return s.broken == nil }

// Forward runs ids (after any pending tokens) through the model and returns
// logits: one row of VocabSize per position of ids when every is set, else
// the last position's row. Prefill is Forward of the prompt; a decode step
// is Forward of one token.
func (s *Session) Forward(ctx context.Context, ids []int, every bool) ([][]float32, error) {
	return s.forward(ctx, ids, every, nil)
}

func (s *Session) forward(ctx context.Context, ids []int, every bool, trace traceFunc) ([][]float32, error) {
	if s.m.closed.Load() {
		return nil, ErrClosed
	}
	if s.broken != nil {
		return nil, fmt.Errorf("engine: session unusable after an interrupted pass: %w", s.broken)
	}
	if len(ids)+len(s.pending) == 0 {
		return nil, fmt.Errorf("%w: no tokens to run", ErrInput)
	}
	V := s.m.cfg.Vocab
	for _, id := range ids {
		if id < 0 || id >= V {
			return nil, fmt.Errorf("%w: token id %d outside the vocabulary [0,%d)", ErrInput, id, V)
		}
	}
	if s.m.cfg.ContextLen > 0 && s.Len()+len(ids) > s.m.cfg.ContextLen {
		return nil, fmt.Errorf("%w: %d tokens exceed the context of %d", ErrInput, s.Len()+len(ids), s.m.cfg.ContextLen)
	}
	if !s.verifying {
		s.settle()
		s.vp = nil
	}
	n := len(s.pending)
	run := append(s.pending[:n:n], ids...)
	s.hist = append(s.hist, ids...)
	flat, err := s.m.forward(ctx, s, run, every, trace)
	if err != nil {
		// A cancelled pass leaves the caches half-updated: the session
		// cannot continue.
		s.broken = err
		s.hist = s.hist[:len(s.hist)-len(ids)]
		return nil, err
	}
	s.pos += len(run)
	s.pending = nil
	if !s.verifying {
		s.observe(run, 0, len(run))
	}
	rows := make([][]float32, len(flat)/V)
	for i := range rows {
		rows[i] = flat[i*V : (i+1)*V]
	}
	if every {
		rows = rows[n:]
	}
	return rows, nil
}
