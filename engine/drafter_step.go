package engine

import (
	"context"
	"fmt"

	"github.com/deltafin/deltafin/kernels"
)

// One session's EAGLE-3 drafting (the drafter interface of draft.go). The
// drafter's row at position p pairs the target's fused hidden state at p
// with the embedding of the token at p+1 (vLLM shifts the input ids by one
// against the hidden states), so a position's row runs once the next
// token is known: observe(t_p, h_p) runs the row of p−1 and keeps h_p
// pending; propose(prefix, k) runs the pending row with prefix[0]'s embedding,
// then chains (deepseek_eagle3.py with norm_output: each further row takes
// the previous row's post-norm output as its hidden state and the
// previous guess's embedding) and rolls the cache back to what observe
// left.

// eagle3Drafter is one session's drafter state.
type eagle3Drafter struct {
	d       *eagle3
	cache   drafterCache
	pending []float32 // [taps·TH]: the last observed position's taps
	have    bool      // pending holds a position
	sc      *drafterScratch
}

func (d *eagle3) newDrafter(*Model) drafter {
	return &eagle3Drafter{d: d, pending: make([]float32, d.cfg.nTaps*d.cfg.TargetHidden), sc: newDrafterScratch(d.cfg)}
}

func (d *eagle3) name() string { return "eagle3" }

// residentBytes is the RAM its weights take, which the RAM plan counts
// (experts.BudgetInput.DraftBytes).
func (d *eagle3) residentBytes() int64 { return d.bytes }

func (e *eagle3Drafter) taps() []int { return e.d.cfg.Taps }

// tapsWithinBlock: EAGLE-3.1 for K3 was trained on vLLM's prefix_only aux
// stream (VLLM_KIMI_K3_AUX_ATTN_RES_STREAM=0): the within-block AttnRes
// partial sum after the layer (vLLM's prefix_sum, which restarts at each
// block boundary), not the whole residual with the completed blocks.
func (e *eagle3Drafter) tapsWithinBlock() bool { return true }

// tapBlocks are the completed blocks the session's drafter wants in its
// taps: none for one that taps the within-block sum (tapsWithinBlock).
func (s *Session) tapBlocks(blocks [][]float32) [][]float32 {
	if w, ok := s.dr.(interface{ tapsWithinBlock() bool }); ok && w.tapsWithinBlock() {
		return nil
	}
	return blocks
}

func (e *eagle3Drafter) reset() {
	e.cache.truncate(0, e.d.cfg.KVLora, e.d.cfg.Rope)
	e.have = false
}

func (e *eagle3Drafter) observe(tok int, hidden [][]float32) {
	c := e.d.cfg
	if e.have && e.cache.rows(c.KVLora) < c.MaxPos && e.validToken(tok) {
		e.d.fuse(e.sc.hid, e.pending, e.sc)
		e.d.row(e.sc, tok, e.sc.hid, &e.cache, false)
	}
	e.have = len(hidden) == c.nTaps
	for i, h := range hidden {
		if len(h) != c.TargetHidden {
			e.have = false
			break
		}
		copy(e.pending[i*c.TargetHidden:], h)
	}
}

func (e *eagle3Drafter) validToken(tok int) bool { return tok >= 0 && tok < e.d.cfg.Vocab }

func (e *eagle3Drafter) propose(ctx context.Context, prefix []int, k int) ([]int, error) {
	c := e.d.cfg
	if !e.have || k <= 0 || len(prefix) == 0 {
		return nil, nil
	}
	for _, t := range prefix {
		if !e.validToken(t) {
			return nil, nil
		}
	}
	base := e.cache.rows(c.KVLora)
	defer e.cache.truncate(base, c.KVLora, c.Rope)
	// The prefix's rows run first (their guesses are the prefix itself),
	// then the chain runs on its own guesses.
	rows := min(len(prefix)+k-1, c.MaxPos-base)
	out := make([]int, 0, k)
	sc := e.sc
	e.d.fuse(sc.hid, e.pending, sc)
	tok := prefix[0]
	for i := range rows {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		g := e.d.row(sc, tok, sc.hid, &e.cache, true)
		if i+1 < len(prefix) {
			tok = prefix[i+1]
		} else {
			out = append(out, g)
			tok = g
		}
		if c.NormOutput {
			copy(sc.hid, sc.out)
		} else {
			copy(sc.hid, sc.mlp) // the pre-norm sum, left there by row
		}
	}
	return out, nil
}

// fuse is combine_hidden_states: each tap RMS-normalised by its fc_norm
// (EAGLE-3.1), concatenated, then fc.
//
//	taps: [taps·TH] → dst [H]
func (d *eagle3) fuse(dst, taps []float32, sc *drafterScratch) {
	c := d.cfg
	x := taps
	if c.FCNorm {
		x = sc.fused
		for i, w := range d.w.fcNorm {
			o := i * c.TargetHidden
			rmsNorm(x[o:o+c.TargetHidden], taps[o:o+c.TargetHidden], w, c.Eps)
		}
	}
	d.backend.MatVec(dst, d.w.fc, x)
}

// row runs the decoder layer for the cache's next position: the token's
// embedding and the hidden state hid [H] in, its KV row appended. With
// score it returns the greedy guess (lm_head argmax) and leaves the
// post-norm output in sc.out and the pre-norm sum in sc.mlp.
//
//	in  = [RMSNorm_in(embed(tok)), RMSNorm_hidden(hid)]      [2H]
//	s   = hid + Attention(in)
//	pre = s + MLP(RMSNorm_post(s))
//	out = RMSNorm_norm(pre)
func (d *eagle3) row(sc *drafterScratch, tok int, hid []float32, k *drafterCache, score bool) int {
	c, w := d.cfg, &d.w
	H := c.Hidden
	pos := k.rows(c.KVLora)
	kernels.DecodeRow(sc.emb, w.embed, tok)
	rmsNorm(sc.in[:H], sc.emb, w.inputNorm, c.Eps)
	copy(sc.residual, hid)
	rmsNorm(sc.in[H:], hid, w.hiddenNorm, c.Eps)
	d.attend(sc.attn, sc.in, pos, k, sc)
	if !score {
		// A committed row only fills the cache: the layer's later half
		// and lm_head feed nothing the next rows read.
		return -1
	}
	add(sc.residual, sc.attn)
	rmsNorm(sc.x, sc.residual, w.postNorm, c.Eps)
	d.backend.ExpertFFN(sc.mlp, w.mlp, kernels.Activation{Kind: kernels.SiLU}, sc.x, 1)
	add(sc.mlp, sc.residual)
	rmsNorm(sc.out, sc.mlp, w.norm, c.Eps)
	d.backend.MatVec(sc.logits, w.lmHead, sc.out)
	return argmax(sc.logits)
}

// describe names the drafter for logs (Draft.String).
func (d *eagle3) describe() string {
	c := d.cfg
	return fmt.Sprintf("EAGLE-3 MLA drafter (%s, hidden %d, %d heads, taps %v, %.2f GB)", c.architectures, c.Hidden, c.Heads, c.Taps, float64(d.bytes)/1e9)
}
