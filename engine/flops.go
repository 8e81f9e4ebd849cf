package engine

import (
	"strings"
)

// The arithmetic of a forward pass, counted from the roster's shapes for
// `deltafin bench prefill`'s ratio to the FMA peak: 2 operations per
// weight a position multiplies, and estimates of the attention's own work.
// Norms, activations, routing and the residual mixing are left out (they
// are linear in the width, not in the weights).

// flops returns, per position, the matmul operations through every layer
// (the routed experts at TopK per MoE layer, the KDA recurrence at about
// 7·d² per head: decay d², k·S and the rank-1 update 2d² each, q·S 2d²);
// those of the LM head for one row of logits; and the operations of MLA
// attention per (query, key) pair summed over the MLA layers (q·k over the
// NoPE and RoPE dims, then the weighted sum over VHead, per head).
func (c *config) flops() (token, head, pair int64) {
	for s := range c.roster() {
		if s.class != floatTensor || len(s.shape) != 2 || strings.Contains(s.name, ".experts.") {
			continue
		}
		switch n := 2 * s.shape[0] * s.shape[1]; s.name {
		case "model.embed_tokens.weight":
			if c.TieEmbeddings {
				head += n
			}
		case "lm_head.weight":
			head += n
		default:
			token += n
		}
	}
	for i := range c.Layers {
		switch c.Kinds[i] {
		case layerKDA:
			token += 7 * int64(c.KDAHeads) * int64(c.KDAHeadDim) * int64(c.KDAHeadDim)
		case layerMLA:
			pair += 2 * int64(c.Heads) * int64(c.NoPE+c.RoPE+c.VHead)
		}
		if c.IsMoE(i) {
			token += int64(c.TopK) * 2 * 3 * int64(c.MoEIntermediate) * int64(c.ExpertDim())
		}
	}
	return token, head, pair
}
