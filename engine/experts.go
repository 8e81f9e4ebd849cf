package engine

import (
	"context"
	"fmt"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/experts"
	"github.com/deltafin/deltafin/kernels"
)

// expertStore hands out routed experts. It is the one seam between the
// forward pass and where expert bytes live: ramExperts holds them all in RAM
// (right for the tiny models and float experts); streamExperts reads MXFP4
// spans per token through an experts.Store (streaming.go). The pass says
// what it knows (a layer starts, the router has chosen, a guess) and the
// store decides what to read ahead; the pass never asks which store it has.
type expertStore interface {
	// start says a pass of T positions has reached layer, before its
	// attention: a store may read ahead the experts it expects (a decode
	// step repeats about 31% of the previous token's).
	start(layer, T int)
	// acquire returns layer's experts ids and starts reading those not in
	// RAM; the batch's views stay valid until release. union is the whole
	// selection ids is part of, in the order it is acquired (a prompt's
	// union, a group of experts.MaxTopK at a time): the store reads the
	// groups after ids ahead, and drops the prefetches of the layer outside
	// union, which were wrong guesses.
	acquire(ctx context.Context, layer int, ids, union []int) (expertBatch, error)
	// want says layer's experts ids will be acquired: certain when the
	// router has chosen them (a prompt's chunk, before its union is
	// complete), else a guess (the lookahead). It never blocks and never
	// changes what acquire returns.
	want(layer int, ids []int, certain bool)
	// fromDisk reports whether acquire may wait for a read: the pass then
	// routes a prompt early and guesses ahead (attend.go, streaming.go).
	fromDisk() bool
	// stats are the store's counters since open (zero for a store in RAM).
	stats() experts.Stats
	// places says where each expert of layers is (experts.Store.Map).
	places(layers []int, n int) (onDisk, cached []bool, heat []float32)
	// setCacheCap resizes the cache to n experts; freed reports memory let
	// go, ok false a store without a cache.
	setCacheCap(n int) (freed, ok bool)
	close() error
}

// expertBatch is one acquire's experts, in the order asked for.
type expertBatch interface {
	// expert waits for the i-th expert and views it as kernels matrices.
	expert(ctx context.Context, i int) (kernels.Expert, error)
	// ready reports, without waiting, whether the i-th expert's bytes are
	// in RAM (expert would return at once).
	ready(i int) bool
	release()
}

// expertSpan is where one routed expert lives on disk: for MXFP4 the six
// tensors form one byte range (w1p w1s w2p w2s w3p w3s, 17,547,264 bytes in
// K3), the unit of I/O and caching.
type expertSpan struct {
	shard  *shard
	off, n int64
	parts  []*tensorRef // in span order
}

// span locates expert e of layer l in a validated checkpoint.
func (ck *checkpoint) span(c *config, layer, e int) expertSpan {
	p := ckpt.ExpertPrefix(layer, e)
	mx, fl := ckpt.ExpertParts(), ckpt.FloatExpertParts()
	names := fl[:]
	if c.ExpertsMXFP4 {
		names = mx[:]
	}
	s := expertSpan{parts: make([]*tensorRef, len(names))}
	for i, n := range names {
		s.parts[i] = ck.tensors[p+n]
	}
	s.shard = s.parts[0].shard
	s.off = s.parts[0].t.Offset
	s.n = s.parts[len(s.parts)-1].t.End() - s.off
	return s
}

// viewExpert views the bytes of one expert as kernels matrices without a
// copy. For MXFP4, buf is the whole span; for float experts (Kimi-Linear's
// Hugging Face layout) it is ignored and each tensor is read separately.
func viewExpert(c *config, sp expertSpan, buf []byte) kernels.Expert {
	D, I := c.ExpertDim(), c.MoEIntermediate
	at := func(r *tensorRef) []byte {
		o := r.t.Offset - sp.off
		return buf[o : o+r.t.Size]
	}
	mx := func(rows, cols int, packed, scale *tensorRef) kernels.Matrix {
		return kernels.Matrix{DType: kernels.MXFP4, Rows: rows, Cols: cols, Data: at(packed), Scales: at(scale)}
	}
	p := sp.parts
	return kernels.Expert{
		W1: mx(I, D, p[0], p[1]),
		W2: mx(D, I, p[2], p[3]),
		W3: mx(I, D, p[4], p[5]),
	}
}

// ramExperts holds every routed expert in memory.
type ramExperts struct {
	layers [][]kernels.Expert // [layer][expert]; nil for dense layers
}

func loadRAMExperts(ctx context.Context, ck *checkpoint, c *config) (*ramExperts, error) {
	s := &ramExperts{layers: make([][]kernels.Expert, c.Layers)}
	for i := 0; i < c.Layers; i++ {
		if !c.IsMoE(i) {
			continue
		}
		s.layers[i] = make([]kernels.Expert, c.Experts)
		for e := range s.layers[i] {
			x, err := readExpert(ctx, ck, c, i, e)
			if err != nil {
				return nil, err
			}
			// In RAM for the model's life: a GPU backend may keep them.
			x.W1.Key, x.W2.Key, x.W3.Key = kernels.NewKey(), kernels.NewKey(), kernels.NewKey()
			s.layers[i][e] = x
		}
	}
	return s, nil
}

// readExpert reads one expert: one ReadAt of its span for MXFP4.
func readExpert(ctx context.Context, ck *checkpoint, c *config, layer, e int) (kernels.Expert, error) {
	sp := ck.span(c, layer, e)
	if !c.ExpertsMXFP4 {
		l := &loader{ctx: ctx, ck: ck}
		p := ckpt.ExpertPrefix(layer, e)
		x := kernels.Expert{W1: l.mat(p + "w1.weight"), W2: l.mat(p + "w2.weight"), W3: l.mat(p + "w3.weight")}
		return x, l.err
	}
	buf := make([]byte, sp.n)
	if err := sp.shard.src.ReadAt(ctx, buf, sp.off); err != nil {
		if ctx.Err() != nil {
			return kernels.Expert{}, err
		}
		return kernels.Expert{}, sp.parts[0].errorf("reading layer %d expert %d (%d bytes at %d): %v", layer, e, sp.n, sp.off, err)
	}
	if err := experts.CheckScales(ckpt.ExpertID{Layer: layer, Expert: e}, sp.shard.name, buf); err != nil {
		return kernels.Expert{}, err
	}
	x := viewExpert(c, sp, buf)
	for _, m := range []kernels.Matrix{x.W1, x.W2, x.W3} {
		if err := m.Validate(); err != nil {
			return kernels.Expert{}, sp.parts[0].errorf("layer %d expert %d: %v", layer, e, err)
		}
	}
	return x, nil
}

func (s *ramExperts) acquire(_ context.Context, layer int, ids, _ []int) (expertBatch, error) {
	b := make(ramBatch, len(ids))
	for i, e := range ids {
		if layer < 0 || layer >= len(s.layers) || e < 0 || e >= len(s.layers[layer]) {
			return nil, fmt.Errorf("%w: no expert %d in layer %d", ErrCheckpoint, e, layer)
		}
		b[i] = s.layers[layer][e]
	}
	return b, nil
}

func (s *ramExperts) start(int, int) {}

func (s *ramExperts) want(int, []int, bool) {}

func (s *ramExperts) fromDisk() bool { return false }

func (s *ramExperts) stats() experts.Stats { return experts.Stats{} }

// places: every expert is on disk and in RAM.
func (s *ramExperts) places(layers []int, n int) (onDisk, cached []bool, heat []float32) {
	onDisk, cached, heat = make([]bool, len(layers)*n), make([]bool, len(layers)*n), make([]float32, len(layers)*n)
	for i := range onDisk {
		onDisk[i], cached[i] = true, true
	}
	return onDisk, cached, heat
}

func (s *ramExperts) setCacheCap(int) (bool, bool) { return false, false }

func (s *ramExperts) close() error { return nil }

type ramBatch []kernels.Expert

func (b ramBatch) expert(_ context.Context, i int) (kernels.Expert, error) { return b[i], nil }

func (ramBatch) ready(int) bool { return true }

func (ramBatch) release() {}
