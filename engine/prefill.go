package engine

import (
	"context"
	"sort"

	"github.com/deltafin/deltafin/kernels"
)

// A prompt's MoE layer cannot read an expert before its router has
// chosen, and the router runs on the attention's output: read whole, the
// layer's attention (about a fifth of a 512-token K3 layer's time on a
// 16-core host) runs with the disk idle. Attention is causal, so it runs
// chunk by chunk of routeChunk positions instead; each chunk is routed as
// it finishes and the experts it names that no earlier chunk did are
// read (PrefetchAhead, as deep as the budget's spare buffers) while the
// next chunk's attention runs. The expert-major pass then starts with the
// union known and its first experts already in RAM.
//
// Each chunk's attention is the same arithmetic as a longer pass's: KDA
// carries its recurrent state and conv window, MLA appends to its cache
// and its query rows see the same key tiles, and the batched products
// give a position the same bits in a block of any size from 8 on
// (posblock.go). The route of a token does not depend on the others. So
// the logits are bit for bit those of the whole-layer pass
// (TestPromptRoutedInChunks).

// routeChunk is the positions per chunk (the first is half of it): small
// enough that the first reads start early, large enough for the
// compute-bound kernels (64 positions and more, kernels/README.md).
const routeChunk = 128

// routesEarly reports whether layer lw runs attention and routing chunk by
// chunk for a pass of T positions: a prompt of at least two chunks, a
// routed MoE block, experts read from disk, and not a speculative pass
// (whose two rows go one by one).
func (m *Model) routesEarly(s *Session, lw *layerWeights, T int) bool {
	if !m.experts.fromDisk() || s.verifying {
		return false
	}
	return lw.moe != nil && T >= 2*routeChunk
}

// attendAndRoute runs layer i's attention over the pass's T positions in
// chunks, for each chunk adding the attention's output to the residual
// partial, mixing and normalising the MLP's input into post, and routing
// it; it returns every token's route and their union in the order it
// was prefetched. x is the attention's normalised input [T, H]; y [T, H]
// is scratch; blocks are the AttnRes block sums so far (forward's).
func (m *Model) attendAndRoute(ctx context.Context, be kernels.Backend, s *Session, i int, lw *layerWeights,
	x, y, partial, post []float32, blocks [][]float32, T int) ([]route, []int, error) {
	c := m.cfg
	H := c.Hidden
	routes := make([]route, 0, T)
	named := make(map[int]bool)
	var order []int
	for t0 := 0; t0 < T; {
		// The first chunk is half a chunk, so that the first reads start
		// sooner. (Only MXFP4 experts stream, so this is K3's KDA, whose
		// delta rule runs token by token; Kimi-Linear's chunked form would
		// take a 64-position chunk token by token too, the same function
		// within rounding.)
		t1 := min(t0+routeChunk, T)
		if t0 == 0 {
			t1 = routeChunk / 2
		}
		if T-t1 < routeChunk {
			t1 = T // the last chunk takes the tail: no short chunk
		}
		n := t1 - t0
		xs, ys := x[t0*H:t1*H], y[t0*H:t1*H]
		var err error
		if lw.kda != nil {
			err = m.kdaForward(ctx, be, ys, xs, n, lw.kda, s.kda[i], false)
		} else {
			err = m.mlaForward(ctx, be, ys, xs, n, lw.mla, s.mla[i])
		}
		if err == nil {
			err = ctx.Err()
		}
		if err != nil {
			return nil, nil, err
		}
		add(partial[t0*H:t1*H], ys)
		rmsNormRows(post[t0*H:t1*H], m.mixRows(blocks, partial, lw.mlpRes, t0, t1), lw.postNorm, c.Eps, H)
		rs, err := m.route(be, post[t0*H:t1*H], n, i, s.pos+t0, lw.moe)
		if err != nil {
			return nil, nil, err
		}
		routes = append(routes, rs...)
		var fresh []int
		for _, r := range rs {
			for _, id := range r.ids {
				if !named[id] {
					named[id] = true
					fresh = append(fresh, id)
				}
			}
		}
		sort.Ints(fresh)
		m.experts.want(i, fresh, true)
		order = append(order, fresh...)
		t0 = t1
	}
	return routes, order, nil
}
