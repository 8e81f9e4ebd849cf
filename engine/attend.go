package engine

import (
	"context"
	"sort"

	"github.com/deltafin/deltafin/kernels"
)

// Every pass runs a layer's attention through one sequence, attend: a
// decode step (T = 1), a speculative pass (its rows one by one in the
// single-row kernels) and a prompt all go chunk by chunk; only the chunks
// differ.
//
// A prompt's MoE layer cannot read an expert before its router has
// chosen, and the router runs on the attention's output: read whole, the
// layer's attention (about a fifth of a 512-token K3 layer's time on a
// 16-core host) runs with the disk idle. Attention is causal, so before
// streamed experts it runs chunk by chunk of routeChunk positions instead;
// each chunk is routed as it finishes and the experts it names that no
// earlier chunk did are read (want, certain: as deep as the budget's spare
// buffers) while the next chunk's attention runs. The expert-major pass
// then starts with the union known and its first experts already in RAM.
// Every other pass is one chunk of all its positions, after which the
// store may guess the next layer's experts from this one's MLP input
// (lookahead, a decode step's prefetch).
//
// Each chunk's attention is the same arithmetic as a longer pass's: KDA
// carries its recurrent state and conv window, MLA appends to its cache
// and its query rows see the same key tiles, and the batched products
// give a position the same bits in a block of any size from 8 on
// (the CPU kernels' slabs, kernels/fast.go). The route of a token does not depend on the others. So
// the logits are bit for bit those of the whole-layer pass
// (TestPromptRoutedInChunks).

// routeChunk is the positions of the first two chunks together (the first
// is half of it): small enough that the first reads start early. Each
// later chunk is as long as all the chunks before it and half a chunk
// more (64, 128, 256, 512, …), up to routeChunkMax: by then the
// union is mostly named, and the batched products of a chunk are the
// longer for it, which a GPU needs (a resident BF16 product on an H200
// ran at 0.17 of its peak at 256 positions; kernels/README.md).
const (
	routeChunk    = 128
	routeChunkMax = 1024
)

// routesEarly reports whether layer lw runs attention and routing chunk by
// chunk for a pass of T positions: a prompt of at least two chunks, a
// routed MoE block, experts read from disk, and not a speculative pass
// (whose rows go one by one).
func (m *Model) routesEarly(s *Session, lw *layerWeights, T int) bool {
	if !m.experts.fromDisk() || s.verifying {
		return false
	}
	return lw.moe != nil && T >= 2*routeChunk
}

// chunkEnd is the end of the chunk starting at t0 of a pass of T
// positions: all of them unless the layer routes early; then the chunks
// grow (routeChunk), and the last takes the tail (no chunk shorter than
// routeChunk after it). Every chunk starts at a multiple of kdaChunkSize,
// so that the KDA's chunked delta rule (kda_chunk.go) cuts a chunked
// prompt where it cuts the whole pass: the same bits.
func chunkEnd(t0, T int, early bool) int {
	if !early {
		return T
	}
	t1 := min(t0+min(routeChunkMax, t0+routeChunk/2), T)
	if T-t1 < routeChunk {
		t1 = T
	}
	return t1
}

// attend runs layer i's attention over the pass's T positions, chunk by
// chunk: for each chunk it adds the attention's output to the residual
// partial [T, H] and mixes and normalises the MLP's input into post
// [T, H]. A layer that routes early (routesEarly) also routes each chunk
// and asks the store for the experts it names first; attend then returns
// every token's route and their union in the order it was asked for, and
// post must not alias x. Otherwise it returns no routes (the MoE block
// routes the whole pass), and post may be x: the one chunk's attention
// has read x before post is written.
//
// x is the attention's normalised input [T, H]; y [T, H] is scratch;
// blocks are the AttnRes block sums so far (forward's).
func (m *Model) attend(ctx context.Context, be kernels.Backend, s *Session, i int, lw *layerWeights,
	x, y, partial, post []float32, blocks [][]float32, T int) ([]route, []int, error) {
	c := m.cfg
	H := c.Hidden
	early := m.routesEarly(s, lw, T)
	var routes []route
	var named map[int]bool
	var order []int
	if early {
		routes, named = make([]route, 0, T), make(map[int]bool)
	}
	for t0 := 0; t0 < T; {
		t1 := chunkEnd(t0, T, early)
		n := t1 - t0
		xs, ys := x[t0*H:t1*H], y[t0*H:t1*H]
		var err error
		if lw.kda != nil {
			err = m.kdaForward(ctx, be, ys, xs, n, lw.kda, s.kda[i], s.verifying)
		} else {
			err = m.mlaForward(ctx, be, ys, xs, n, lw.mla, s.mla[i])
		}
		if err == nil {
			err = ctx.Err() // before the MLP: a long prompt's is seconds of work
		}
		if err != nil {
			return nil, nil, err
		}
		add(partial[t0*H:t1*H], ys)
		mIn := m.mixRows(blocks, partial, lw.mlpRes, t0, t1)
		rmsNormRows(post[t0*H:t1*H], mIn, lw.postNorm, c.Eps, H)
		if !early {
			m.lookahead(i, mIn, T)
			return nil, nil, nil
		}
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
