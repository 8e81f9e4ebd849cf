package engine

import (
	"context"

	"github.com/deltafin/deltafin/kernels"
)

// N-gram speculation: while decoding, the engine guesses the token after the
// pending one by finding the latest earlier occurrence of the conversation's
// last few tokens (prompt and output alike) and taking what followed it. The
// pending token and the guess run in one two-position pass, which pays a
// layer's fixed costs once (the streamed spine layer is read once, and the
// union of both positions' experts is acquired once). The first position's
// logits are exactly a decode step's: the pass runs every product one row at
// a time (rowByRow), the KDA recurrence step by step and the attention per
// position, so decoding picks the same token (greedy or sampled: the
// random number is keyed by the position); when it is the guess,
// the second position's logits give one more token for free. When it is
// not, the guess is undone by reference: the KDA and conv states after the
// first position were written to the state's second buffers (kdaState.mid*)
// and are swapped back in, and the MLA caches drop their last position.

const (
	specMaxN = 4 // longest suffix matched
	specMinN = 2 // shortest: a single repeated token guesses badly
	// specWindow bounds the history searched per step.
	specWindow = 1 << 14
)

// SpecStats counts a session's speculative passes.
type SpecStats struct {
	Passes   int // two-position passes run
	Accepted int // of which the guess was the token picked
	Steps    int // single-token decode passes
}

// TokensPerPass is generated tokens per decode pass (1 without speculation).
func (s SpecStats) TokensPerPass() float64 {
	passes := s.Passes + s.Steps
	if passes == 0 {
		return 0
	}
	return float64(passes+s.Accepted) / float64(passes)
}

// AcceptRate is the share of speculative passes whose guess was accepted.
func (s SpecStats) AcceptRate() float64 {
	if s.Passes == 0 {
		return 0
	}
	return float64(s.Accepted) / float64(s.Passes)
}

// SpecStats returns the session's speculation counters.
func (s *Session) SpecStats() SpecStats { return s.spec }

// draft guesses the token after the history: what followed the latest
// earlier occurrence of its longest suffix of specMaxN..specMinN tokens.
func draft(hist []int) (int, bool) {
	lo := max(0, len(hist)-specWindow)
	for n := min(specMaxN, len(hist)-1); n >= specMinN; n-- {
		suf := hist[len(hist)-n:]
		// j is the end of an earlier occurrence; hist[j] follows it.
		for j := len(hist) - 1; j-n >= lo; j-- {
			if equalInts(hist[j-n:j], suf) {
				return hist[j], true
			}
		}
	}
	return 0, false
}

func equalInts(a, b []int) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// verify runs the pending token and guess in one pass and returns the
// first position's logits and, when the guess is the token pick chooses
// from them (argmax when pick is nil), the second's; the caller keeps the
// guess or calls rewind.
func (s *Session) verify(ctx context.Context, guess int, pick func(row []float32) int) ([][]float32, error) {
	tok := s.pending[0]
	s.pending = nil
	s.hist = s.hist[:len(s.hist)-1] // forward appends it again
	s.verifying, s.pickGuess = true, pick
	defer func() { s.verifying, s.pickGuess = false, nil }()
	return s.forward(ctx, []int{tok, guess}, true, nil)
}

// accept reports whether guess is the token picked from row, the first
// row of a verify pass.
func (s *Session) accept(row []float32, guess int) bool {
	if s.pickGuess == nil {
		return argmax(row) == guess
	}
	return s.pickGuess(row) == guess
}

// rewind undoes the last position of a verify pass.
func (s *Session) rewind() {
	c := s.m.cfg
	for i := range s.kda {
		if s.kda[i] != nil {
			s.kda[i].rewind()
		}
		if mc := s.mla[i]; mc != nil {
			mc.k = mc.k[:(s.pos-1)*c.Heads*(c.NoPE+c.RoPE)]
			mc.v = mc.v[:(s.pos-1)*c.Heads*c.VHead]
		}
	}
	s.pos--
	s.hist = s.hist[:len(s.hist)-1]
}

// rowByRow computes a batch one row at a time with the single-row kernels,
// so that each row has exactly the bits of a decode step (the batched
// kernels sum in another order). The weights are read once per pass from
// disk; only their trip through the caches repeats per row.
type rowByRow struct{ kernels.Backend }

func (b rowByRow) MatMul(dst []float32, w kernels.Matrix, x []float32, n int) {
	for t := range n {
		b.Backend.MatMul(dst[t*w.Rows:(t+1)*w.Rows], w, x[t*w.Cols:(t+1)*w.Cols], 1)
	}
}

func (b rowByRow) ExpertFFN(dst []float32, e kernels.Expert, act kernels.Activation, x []float32, n int) {
	D := e.W1.Cols
	for t := range n {
		b.Backend.ExpertFFN(dst[t*D:(t+1)*D], e, act, x[t*D:(t+1)*D], 1)
	}
}
