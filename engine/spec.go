package engine

import (
	"github.com/deltafin/deltafin/kernels"
)

// N-gram speculation: while decoding, the engine guesses the tokens after
// the pending one by finding the latest earlier occurrence of the
// conversation's last few tokens (prompt and output alike) and taking what
// followed it (a run continues into its own guesses, so a repeating
// period is guessed as far as asked). The guesses are verified with the
// pending token in one pass (verify.go); a model drafter (draft.go) fills
// what n-gram does not guess, and the pricing (price.go) sets how many.

const (
	specMaxN = 4 // longest suffix matched
	specMinN = 2 // shortest: a single repeated token guesses badly
	// specWindow bounds the history searched per step.
	specWindow = 1 << 14
)

// SpecStats counts a session's decode passes and drafts.
type SpecStats struct {
	Passes   int   // verify passes (two positions or more)
	Steps    int   // single-position decode passes
	Drafted  int   // tokens drafted and verified
	Accepted int   // of which kept (each a token without a pass of its own)
	Bytes    int64 // bytes read from disk during the decode passes (streamed models)
}

// Sub is s less an earlier reading b.
func (s SpecStats) Sub(b SpecStats) SpecStats {
	return SpecStats{Passes: s.Passes - b.Passes, Steps: s.Steps - b.Steps, Drafted: s.Drafted - b.Drafted,
		Accepted: s.Accepted - b.Accepted, Bytes: s.Bytes - b.Bytes}
}

// Add is s plus b (the server's totals over its generations).
func (s SpecStats) Add(b SpecStats) SpecStats {
	return SpecStats{Passes: s.Passes + b.Passes, Steps: s.Steps + b.Steps, Drafted: s.Drafted + b.Drafted,
		Accepted: s.Accepted + b.Accepted, Bytes: s.Bytes + b.Bytes}
}

// TargetPasses is the number of decode passes of the target.
func (s SpecStats) TargetPasses() int { return s.Passes + s.Steps }

// Tokens is the tokens the decode passes gave: one per pass and the
// accepted drafts.
func (s SpecStats) Tokens() int { return s.Passes + s.Steps + s.Accepted }

// TokensPerPass is generated tokens per decode pass (1 without speculation).
func (s SpecStats) TokensPerPass() float64 {
	if s.TargetPasses() == 0 {
		return 0
	}
	return float64(s.Tokens()) / float64(s.TargetPasses())
}

// AcceptRate is the share of drafted tokens accepted.
func (s SpecStats) AcceptRate() float64 {
	if s.Drafted == 0 {
		return 0
	}
	return float64(s.Accepted) / float64(s.Drafted)
}

// BytesPerToken is the bytes read from disk per token the decode passes
// gave (per accepted token: the target's own and the kept drafts).
func (s SpecStats) BytesPerToken() float64 {
	if s.Tokens() == 0 {
		return 0
	}
	return float64(s.Bytes) / float64(s.Tokens())
}

// SpecStats returns the session's speculation counters.
func (s *Session) SpecStats() SpecStats { return s.spec }

// ngram guesses up to k tokens after the history: what followed the latest
// earlier occurrence of its longest suffix of specMaxN..specMinN tokens,
// read on through the guesses themselves past the history's end.
func ngram(hist []int, k int) []int {
	j := ngramAt(hist)
	if j < 0 || k < 1 {
		return nil
	}
	out := []int{hist[j]}
	for i := 1; i < k; i++ {
		if p := j + i; p < len(hist) {
			out = append(out, hist[p])
		} else {
			out = append(out, out[p-len(hist)])
		}
	}
	return out
}

// draft guesses the token after the history: what followed the latest
// earlier occurrence of its longest suffix of specMaxN..specMinN tokens.
func draft(hist []int) (int, bool) {
	if j := ngramAt(hist); j >= 0 {
		return hist[j], true
	}
	return 0, false
}

// ngramAt is the index of the token that follows the latest earlier
// occurrence of the history's longest matched suffix, or −1.
func ngramAt(hist []int) int {
	lo := max(0, len(hist)-specWindow)
	for n := min(specMaxN, len(hist)-1); n >= specMinN; n-- {
		suf := hist[len(hist)-n:]
		// j is the end of an earlier occurrence; hist[j] follows it.
		for j := len(hist) - 1; j-n >= lo; j-- {
			if equalInts(hist[j-n:j], suf) {
				return j
			}
		}
	}
	return -1
}

func equalInts(a, b []int) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
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
