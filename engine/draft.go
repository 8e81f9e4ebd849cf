package engine

import (
	"context"
)

// Drafting: a drafter guesses the tokens after the conversation, and one
// target pass verifies T = drafted + 1 positions (verify.go). A drafted
// token is kept only where it equals the token the target itself picks at
// that position (argmax, or the seeded draw keyed by the position), so the
// tokens are the target's alone whatever the drafter says; a good drafter
// only makes the passes fewer.
//
// How the target feeds a drafter. The conversation's tokens run through
// the target at positions 0, 1, …; at each position p the target's pass
// computes, after each layer i in taps(), the hidden state h_i[p] ([H]:
// the residual stream after layer i, embedding included: tapHidden in
// verify.go). Once a
// position is final (a prompt token, or a token the verify pass kept) the
// session calls observe(tok[p], [h_taps[0][p], h_taps[1][p], …]) in
// position order, exactly once per position: prompt positions after their
// prefill, a verify pass's kept positions after the pass, and a resumed
// job's replayed positions as they run again. The last picked token (the
// pending one: chosen from the last observed position's logits, not yet
// run) is not observed; propose gets it, followed by any tokens already
// drafted for this pass by another drafter (n-gram guesses come first):
//
//	observe(t_0, h[0]) … observe(t_p, h[p])        positions 0..p ran
//	propose(ctx, [t_{p+1}, g_{p+2}…], k) → up to k tokens after the prefix
//
// (EAGLE-3's input pairs h[p] with the embedding of t_{p+1}.) Rejected
// guesses are never observed: propose must leave the drafter as observe
// left it (a model drafter rolls its own cache back). reset forgets every
// observed position; the session calls it when it starts over.
//
// A drafter lives in one session (not safe for concurrent use); a
// draftSource makes one per session.

// drafter proposes tokens that the target verifies exactly.
type drafter interface {
	// taps are the target layers whose hidden states observe receives, in
	// that order; nil for none (the target then computes nothing extra).
	taps() []int
	// observe records the token at the next position and the target's
	// hidden states there, one [H] slice per tap (valid only during the
	// call).
	observe(tok int, hidden [][]float32)
	// propose returns up to k tokens that may follow prefix, the tokens
	// after the observed ones (prefix[0] is the pending token); fewer (or
	// none) when it has no guess. It returns ctx's error once ctx ends.
	propose(ctx context.Context, prefix []int, k int) ([]int, error)
	// reset forgets every observed position.
	reset()
}

// draftSource makes a session's drafter for the target m (whose embedding
// and lm_head a model drafter may share). A model drafter's weights live in
// the source (shared, immutable); the per-session state in the drafter.
type draftSource interface {
	newDrafter(m *Model) drafter
	// name is how run --json and /health name the drafter.
	name() string
}

// Draft is a --draft flag's value (ParseDraft) and the drafter it makes,
// to verify against: Options.Draft for every session of a model,
// Session.SetDraft for one. Kind and Rate say what was asked; only a Draft
// that a With method made drafts (the oracle needs the answer first). The
// zero value is none (n-gram speculation alone, as before drafters).
type Draft struct {
	Kind string  // "ngram" (n-gram speculation alone), "off" (none) or "oracle"
	Rate float64 // the oracle's acceptance R, 0 ≤ R ≤ 1
	src  draftSource
}

// Name names the drafter ("" for none).
func (d Draft) Name() string {
	if d.src == nil {
		return ""
	}
	return d.src.name()
}

// String describes the drafter for logs: its name, or what a model
// drafter is and the RAM it takes ("" for none).
func (d Draft) String() string {
	if s, ok := d.src.(interface{ describe() string }); ok {
		return s.describe()
	}
	return d.Name()
}
