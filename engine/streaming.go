package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/experts"
	"github.com/deltafin/deltafin/internal/directio"
	"github.com/deltafin/deltafin/kernels"
)

// StreamOptions turns on streaming for a checkpoint larger than RAM: routed
// MXFP4 experts are read per token through the expert store (cache, prefetch,
// page cache bypassed) and spine layers beyond the budget's pinned prefix are
// read per token, one layer ahead of compute (spinering.go).
type StreamOptions struct {
	// Machine RAM for the budget (sysinfo.ReadMemory) and the --ram-gb
	// override; ignored when Plan is set.
	TotalRAM, AvailableRAM, OverrideRAM int64
	// Plan, when set, is used as is instead of planning from the RAM
	// figures (tests force a small cache or zero pinned layers with it).
	Plan *experts.BudgetPlan
	// HeatPath is where the heat histogram persists across runs: loaded at
	// open (a damaged or foreign file starts afresh) and saved at Close;
	// empty: a fresh histogram each run.
	HeatPath string
	// TracePath, when set, receives the router trace (--trace): one JSON
	// line per token and MoE layer, written to a temporary file and renamed
	// to TracePath when the model closes.
	TracePath string
	// Drives are expert drives holding replicas (drives.go); MirrorLast
	// reads from the checkpoint only what no working drive holds (bench).
	Drives     []experts.Drive
	MirrorLast bool
	// OpenDrives, when set, is called once by Open with the routed experts
	// its own index parse found, before the expert store opens, and the
	// drives it returns join Drives: a caller that picks drives by the
	// model's expert layout needs no second parse of the index (about a
	// second on the full K3). An error fails the open.
	OpenDrives func(ctx context.Context, spans map[ckpt.ExpertID]ckpt.ExpertSpan) ([]experts.Drive, error)
	// HeatHalfLife is the tokens between halvings of the heat histogram
	// (0: experts.DefaultHeatHalfLife; negative: cumulative counts).
	HeatHalfLife int
	mode         directio.Mode // directio.Direct; tests read buffered too
}

// spineTensors groups the spine's tensors (every tensor but the routed
// experts) by decoder layer, in one pass over the index; the others are the
// globals (embedding, lm_head, final norms).
func (ck *checkpoint) spineTensors(c *config) (layers [][]*tensorRef, globals []*tensorRef) {
	layers = make([][]*tensorRef, c.Layers)
	for name, r := range ck.tensors {
		if ckpt.IsExpertTensor(name) {
			continue
		}
		if i, ok := ckpt.LayerOf(name, c.Layers); ok {
			layers[i] = append(layers[i], r)
		} else if _, layer := ckpt.LayerOf(name, math.MaxInt); !layer {
			globals = append(globals, r)
		}
	}
	return layers, globals
}

// spineBytes returns the spine bytes of each decoder layer and of the
// globals (the engine keeps them in RAM), from the checkpoint's tensor index.
func (ck *checkpoint) spineBytes(c *config) ([]int64, int64) {
	byLayer, globalRefs := ck.spineTensors(c)
	layers := make([]int64, c.Layers)
	for i, refs := range byLayer {
		for _, r := range refs {
			layers[i] += r.t.Size
		}
	}
	var globals int64
	for _, r := range globalRefs {
		globals += r.t.Size
	}
	return layers, globals
}

// spineRAMBytes returns the RAM each spine layer and the globals take
// loaded: their checkpoint bytes, or the int8 copy's where there is one.
func (m *Model) spineRAMBytes() ([]int64, int64) {
	c := m.cfg
	layers, globals := m.ck.spineBytes(c)
	if m.i8 != nil {
		// With the int8 spine its matrices take 1 byte per weight plus
		// a float32 scale per row in RAM.
		for name, r := range m.i8.tensors {
			orig := m.ck.tensors[name]
			if strings.HasSuffix(name, "_scale") || orig == nil || len(r.t.Shape) != 2 {
				continue
			}
			d := r.t.Size + 4*r.t.Shape[0] - orig.t.Size
			if i, ok := ckpt.LayerOf(name, c.Layers); ok {
				layers[i] += d
				continue
			}
			globals += d
		}
	}
	return layers, globals
}

// planStreaming applies the budget: how many spine layers are pinned and
// how many experts the cache keeps.
func (m *Model) planStreaming(o *StreamOptions) (experts.BudgetPlan, error) {
	if o.Plan != nil {
		return *o.Plan, nil
	}
	c := m.cfg
	layers, globals := m.spineRAMBytes()
	moe := 0
	for i := range c.Layers {
		if c.IsMoE(i) {
			moe++
		}
	}
	var span int64
	if c.ExpertsMXFP4 && c.Experts > 0 {
		span = ckpt.ExpertSpanSize(c.MoEIntermediate, c.ExpertDim())
	}
	working := int64(2*experts.MaxTopK+32) * (directio.AlignUp(span) + directio.Align)
	var draft int64
	if r, ok := m.draft.src.(interface{ residentBytes() int64 }); ok {
		draft = r.residentBytes()
	}
	return experts.PlanBudget(experts.BudgetInput{
		TotalRAM: o.TotalRAM, AvailableRAM: o.AvailableRAM, OverrideRAM: o.OverrideRAM,
		GlobalBytes: globals, LayerBytes: layers, WorkingBytes: working, DraftBytes: draft,
		SpanBytes: span, MoELayers: moe, ExpertsPerLayer: c.Experts, TopK: c.TopK,
	})
}

// streamExperts serves routed experts from an experts.Store.
type streamExperts struct {
	store         *experts.Store
	inter, latent int
	heatPath      string
	// spineStreamed: spine layers past the pinned prefix are read per
	// token, and they keep the disk busy.
	spineStreamed bool
}

func openStreamExperts(ctx context.Context, dir string, ck *checkpoint, c *config, o *StreamOptions, cache int, meter *experts.Meter, spineStreamed bool) (*streamExperts, error) {
	var heat *experts.Heat
	if o.HeatPath != "" {
		// A damaged or foreign histogram only costs warm-up: start afresh
		// and overwrite it at close.
		heat, _ = experts.LoadHeat(o.HeatPath, c.Layers, c.Experts)
	}
	drives := o.Drives
	if o.OpenDrives != nil {
		more, err := o.OpenDrives(ctx, ck.experts)
		if err != nil {
			return nil, err
		}
		drives = append(slices.Clip(drives), more...)
	}
	s, err := experts.Open(ctx, experts.Options{
		Dir: dir, Spans: ck.experts, Mode: o.mode, Heat: heat, Sources: ck.sources(), CacheExperts: cache, Meter: meter,
		Drives: drives, MirrorLast: o.MirrorLast, HeatHalfLife: o.HeatHalfLife,
	})
	if err != nil {
		return nil, err
	}
	return &streamExperts{store: s, inter: c.MoEIntermediate, latent: c.ExpertDim(), heatPath: o.HeatPath, spineStreamed: spineStreamed}, nil
}

// start prefetches, at a decode or speculative step (T ≤ 2), the experts
// the layer used last time. A prompt's union holds most of the previous
// token's experts anyway, and its group prefetches read them in order.
// With streamed spine layers the ring keeps the disk busy and the disk is
// the limit: a wrong guess (about 69% of them, docs/MODEL.md §10) would
// only cost disk time.
func (s *streamExperts) start(layer, T int) {
	if T <= 2 && !s.spineStreamed {
		s.store.PrefetchPrevious(layer)
	}
}

// acquire acquires ids, then reads ahead the rest of union: the next group
// (certain: it may evict a cold cached expert for a buffer) and, as deep
// as spare buffers allow, the groups after it.
func (s *streamExperts) acquire(ctx context.Context, layer int, ids, union []int) (expertBatch, error) {
	b, err := s.store.AcquirePart(ctx, layer, ids, union)
	if err != nil {
		return nil, err
	}
	if rest := restOf(union, ids); len(rest) > 0 {
		next := rest[:min(len(rest), experts.MaxTopK)]
		s.store.PrefetchPart(layer, next)
		s.store.PrefetchAhead(layer, rest[len(next):])
	}
	return &streamBatch{b: b, s: s}, nil
}

// restOf returns what follows ids in union, where ids is a run of union
// (an acquisition group); nil when it is not one.
func restOf(union, ids []int) []int {
	if len(ids) == 0 || len(ids) >= len(union) {
		return nil
	}
	for p := 0; p+len(ids) <= len(union); p++ {
		if union[p] == ids[0] {
			if slices.Equal(union[p:p+len(ids)], ids) {
				return union[p+len(ids):]
			}
			return nil
		}
	}
	return nil
}

func (s *streamExperts) want(layer int, ids []int, certain bool) {
	if certain {
		s.store.PrefetchAhead(layer, ids)
		return
	}
	s.store.Prefetch(layer, ids)
}

func (s *streamExperts) fromDisk() bool { return true }

func (s *streamExperts) stats() experts.Stats { return s.store.Stats() }

func (s *streamExperts) places(layers []int, n int) (onDisk, cached []bool, heat []float32) {
	return s.store.Map(layers, n)
}

func (s *streamExperts) setCacheCap(n int) (bool, bool) { return s.store.SetCacheCap(n), true }

func (s *streamExperts) close() error {
	err := s.store.Close()
	if s.heatPath != "" {
		if serr := s.store.Heat().Save(s.heatPath); err == nil {
			err = serr
		}
	}
	return err
}

type streamBatch struct {
	b *experts.Batch
	s *streamExperts
}

func (b *streamBatch) expert(ctx context.Context, i int) (kernels.Expert, error) {
	data, err := b.b.Wait(ctx, i)
	if errors.Is(err, ckpt.ErrNotFinite) {
		return kernels.Expert{}, fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	if err != nil {
		return kernels.Expert{}, err
	}
	return experts.View(data, b.s.inter, b.s.latent)
}

func (b *streamBatch) ready(i int) bool {
	select {
	case <-b.b.Done(i):
		return true
	default:
		return false
	}
}

func (b *streamBatch) release() { b.b.Release() }

// lookahead guesses layer i+1's experts while layer i still has its MoE
// block to run: layer i+1's norm and router applied to layer i's
// post-attention residual (the "PILOT" lookahead; its reported recall on
// K3 is 59–70%, docs/MODEL.md §10). The guess is only a prefetch: layer
// i+1's own router decides, and the store drops wrong guesses. Decode steps
// only (T = 1), streamed experts only, and only when layer i+1's spine is
// pinned: a streamed spine keeps the disk busy, where wrong guesses (the
// other 30–40%) would cost disk time.
func (m *Model) lookahead(i int, mIn []float32, T int) {
	if !m.experts.fromDisk() || T != 1 || i+1 >= m.cfg.Layers {
		return
	}
	var next *layerWeights
	switch {
	case i+1 < m.pinned:
		next = &m.w.layers[i+1]
	}
	if next == nil || next.moe == nil {
		return
	}
	c := m.cfg
	x := make([]float32, c.Hidden)
	rmsNormRows(x, mIn, next.postNorm, c.Eps, c.Hidden)
	logits := make([]float32, c.Experts)
	m.backend.MatVec(logits, next.moe.router, x)
	m.experts.want(i+1, c.router(logits, next.moe.bias).ids, false)
}
