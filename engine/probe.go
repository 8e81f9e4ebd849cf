package engine

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/experts"
	"github.com/deltafin/deltafin/internal/directio"
	"github.com/deltafin/deltafin/kernels"
)

// The measurement seam of `deltafin bench slice` (package bench). The
// bench's synthetic loops choose experts themselves (random routes with
// K3's token-to-token repeat) to measure the store and the disk apart from
// the router, so they cannot run through a Model; a Probe is the smallest
// door that lets them: it reads a checkpoint's routed experts through the
// same expert store a Model streams from and computes their FFNs here,
// so no byte or tensor leaves the engine.

// ProbeOptions configures OpenProbe.
type ProbeOptions struct {
	// Mode is how the store reads: "direct" (the default, page cache
	// bypassed), "drop-behind" or "buffered".
	Mode string
	// CacheExperts is how many experts the store keeps between uses.
	CacheExperts int
	// Backend computes the expert FFNs; nil means kernels.Default().
	Backend kernels.Backend
	// Drives, MirrorLast and HeatHalfLife are StreamOptions'.
	Drives       []experts.Drive
	MirrorLast   bool
	HeatHalfLife int
}

// A Probe reads the routed experts of one checkpoint through an expert
// store, without loading its spine.
type Probe struct {
	store  *experts.Store
	be     kernels.Backend
	act    kernels.Activation
	inter  int
	latent int
	x      []float32 // [latent] the FFN input, a fixed pattern
}

// OpenProbe opens dir's checkpoint (config and headers only) and an expert
// store over its MXFP4 routed experts.
func OpenProbe(ctx context.Context, dir string, o ProbeOptions) (*Probe, error) {
	mode := directio.Direct
	if o.Mode != "" {
		var err error
		if mode, err = directio.ParseMode(o.Mode); err != nil {
			return nil, err
		}
	}
	if o.Backend == nil {
		o.Backend = kernels.Default()
	}
	c, ck, err := openIndex(ctx, dir, ckpt.OpenFile)
	if err != nil {
		return nil, err
	}
	ck.close()
	spans := ck.experts
	if !c.ExpertsMXFP4 || len(spans) == 0 {
		return nil, fmt.Errorf("%w: %s has %w to probe", ErrConfig, dir, ckpt.ErrNoExperts)
	}
	s, err := experts.Open(ctx, experts.Options{Dir: dir, Spans: spans, Mode: mode, CacheExperts: o.CacheExperts,
		Drives: o.Drives, MirrorLast: o.MirrorLast, HeatHalfLife: o.HeatHalfLife})
	if err != nil {
		return nil, err
	}
	p := &Probe{store: s, be: o.Backend, act: c.Act, inter: c.MoEIntermediate, latent: c.ExpertDim()}
	p.x = make([]float32, p.latent)
	for i := range p.x {
		p.x[i] = float32(i%7-3) / 8
	}
	return p, nil
}

// Read reads the experts ids of layer and waits until all have arrived.
func (p *Probe) Read(ctx context.Context, layer int, ids []int) error {
	return p.Step(ctx, layer, ids, -1, nil, false)
}

// Step is one MoE layer of a synthetic decode step: it acquires the
// experts ids of layer (their reads start), prefetches nextIDs of
// nextLayer (none when nextLayer < 0), and, as each expert arrives, runs
// its FFN on one of the cores when compute is set (else only waits).
func (p *Probe) Step(ctx context.Context, layer int, ids []int, nextLayer int, nextIDs []int, compute bool) error {
	b, err := p.store.Acquire(ctx, layer, ids)
	if err != nil {
		return err
	}
	defer b.Release()
	if nextLayer >= 0 {
		p.store.Prefetch(nextLayer, nextIDs)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, runtime.NumCPU())
	for w := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dst := make([]float32, p.latent)
			for {
				i := int(next.Add(1) - 1)
				if i >= b.Len() {
					return
				}
				data, err := b.Wait(ctx, i)
				if err != nil {
					errs[w] = err
					return
				}
				if !compute {
					continue
				}
				e, err := experts.View(data, p.inter, p.latent)
				if err != nil {
					errs[w] = err
					return
				}
				p.be.ExpertFFN(dst, e, p.act, p.x, 1)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Stats returns the store's counters since OpenProbe (SpineBytes and the
// in-flight figures stay zero: a probe reads no spine and has no meter).
func (p *Probe) Stats() Stats { return statsOf(p.store.Stats(), 0, experts.MeterStats{}) }

// Close closes the store and its shards.
func (p *Probe) Close() error { return p.store.Close() }
