package engine

import (
	"context"
	"fmt"
)

// Verify passes: the pending token and k drafted tokens run as one pass of
// T = k+1 positions, which pays a layer's fixed costs once (a streamed
// spine layer is read once, the union of the positions' experts is
// acquired once). Every row has exactly a decode step's bits: the pass
// runs every product one row at a time (rowByRow), the KDA recurrence step
// by step and the attention per position. The row of position t picks the
// token at conversation index start+t+1 (greedy, or the seeded draw keyed
// by that index: sample.go), the token the target alone would pick there;
// draft t is kept only when it is that token, and the rows stop at the
// first that is not (lm_head is skipped for the rest).
//
// After the pass every layer has run all T positions; keep(n) rolls the
// session back to its first n: the MLA caches drop their last positions,
// and each KDA layer runs its first n steps again from the state before the
// pass (kdaState.keep), which is bit for bit the state n decode steps
// leave. keep can be called again with a smaller n (a stop sequence that
// ends the turn inside the kept drafts) until the next pass.

// verifyPass is the session's record of its last verify pass.
type verifyPass struct {
	start int   // s.pos before the pass
	hist  int   // len(s.hist) before the pass's drafts were appended
	ids   []int // the pass's T inputs: the pending token, then the drafts
	picks []int // picks[t]: the token row t picked (rows computed only)
	kept  int   // positions kept (keep); observed by the drafter lazily
	// seen is how many of the kept positions the drafter has observed.
	seen int
	// pick chooses the token at conversation index pos from row.
	pick func(pos int, row []float32) int
}

// verify runs the pending token and drafts in one pass and returns the
// rows computed (1 to T: up to the first whose pick is not the next draft)
// and each row's pick. Every position stays run until keep.
func (s *Session) verify(ctx context.Context, drafts []int, pick func(pos int, row []float32) int) ([][]float32, []int, error) {
	if len(s.pending) != 1 || len(drafts) == 0 {
		return nil, nil, fmt.Errorf("%w: a verify pass needs one pending token and a draft", ErrInput)
	}
	if pick == nil {
		pick = func(_ int, row []float32) int { return argmax(row) }
	}
	s.settle()
	tok := s.pending[0]
	s.pending = nil
	s.hist = s.hist[:len(s.hist)-1] // forward appends it again
	ids := append([]int{tok}, drafts...)
	vp := &verifyPass{start: s.pos, hist: len(s.hist), ids: ids, pick: pick}
	s.vp = vp
	s.verifying = true
	rows, err := s.forward(ctx, ids, true, nil)
	s.verifying = false
	if err != nil {
		s.vp = nil
		return nil, nil, err
	}
	vp.kept = len(ids)
	return rows, vp.picks, nil
}

// verifyPick is the forward pass's check of row t of a verify pass: it
// records the pick and reports whether the draft after position t is it.
func (s *Session) verifyPick(t int, row []float32) bool {
	vp := s.vp
	p := vp.pick(vp.start+t+1, row)
	vp.picks = append(vp.picks, p)
	return t+1 < len(vp.ids) && p == vp.ids[t+1]
}

// keep rolls the session back to the first n positions of its last verify
// pass (1 ≤ n ≤ the positions kept so far).
func (s *Session) keep(n int) {
	vp := s.vp
	if n >= vp.kept {
		return
	}
	c := s.m.cfg
	vp.kept = n
	for i := range s.kda {
		if st := s.kda[i]; st != nil {
			st.keep(s.m.backend, n, c.KDAHeads, c.KDAHeadDim, c.ConvSize, s.m.heads)
		}
		if mc := s.mla[i]; mc != nil {
			p := vp.start + n
			mc.k = mc.k[:p*c.Heads*(c.NoPE+c.RoPE)]
			mc.v = mc.v[:p*c.Heads*c.VHead]
		}
	}
	s.pos = vp.start + n
	s.hist = s.hist[:vp.hist+n]
}

// tapHidden is the hidden state a drafter taps after a layer: the residual
// stream, embedding included. With Block Attention Residuals it is the sum
// of the completed blocks and the partial one (each layer's output added
// once, as in a plain residual stream). dst and partial are [T, H].
func tapHidden(dst []float32, blocks [][]float32, partial []float32) {
	copy(dst, partial)
	for _, b := range blocks {
		for i := range dst {
			dst[i] += b[i]
		}
	}
}

// tapsFor is the drafter's taps as an index by layer (−1: not tapped) and
// the scratch the pass fills, or nil without taps.
func (s *Session) tapsFor(T int) []int {
	if s.dr == nil {
		return nil
	}
	taps := s.dr.taps()
	if len(taps) == 0 {
		return nil
	}
	at := make([]int, s.m.cfg.Layers)
	for i := range at {
		at[i] = -1
	}
	H := s.m.cfg.Hidden
	s.tapBuf = s.tapBuf[:0]
	for j, l := range taps {
		if l >= 0 && l < len(at) {
			at[l] = j
		}
		s.tapBuf = append(s.tapBuf, make([]float32, T*H))
	}
	return at
}

// observe hands the drafter positions [from, to) of the pass just run,
// whose inputs were ids.
func (s *Session) observe(ids []int, from, to int) {
	if s.dr == nil {
		return
	}
	H := s.m.cfg.Hidden
	hidden := make([][]float32, len(s.tapBuf))
	for t := from; t < to; t++ {
		for j, b := range s.tapBuf {
			hidden[j] = b[t*H : (t+1)*H]
		}
		s.dr.observe(ids[t], hidden)
	}
}

// settle hands the drafter the kept positions of the last verify pass it
// has not seen (keep may have shortened them after the pass).
func (s *Session) settle() {
	vp := s.vp
	if vp == nil || vp.seen >= vp.kept {
		return
	}
	s.observe(vp.ids, vp.seen, vp.kept)
	vp.seen = vp.kept
}
