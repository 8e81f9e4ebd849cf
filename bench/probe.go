package bench

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/deltafin/deltafin/experts"
	"github.com/deltafin/deltafin/internal/directio"
	"github.com/deltafin/deltafin/kernels"
)

// The synthetic loops of bench slice choose experts themselves (random
// routes with K3's token-to-token repeat) to measure the expert store and
// the disk apart from the router, so they cannot run through a model: a
// probe drives an experts.Store over a checkpoint's routed experts directly,
// the same store a streamed model reads through, and computes their FFNs
// with the kernels on K3's shapes.

// k3Act is K3's expert activation as the slice's config names it (situ,
// beta 4, linear beta 25).
var k3Act = kernels.Activation{Kind: kernels.SiTU, Beta: 4, LinearBeta: 25}

// probeOptions configures openProbe.
type probeOptions struct {
	// Mode is how the store reads: "direct" (the default, page cache
	// bypassed), "drop-behind" or "buffered".
	Mode string
	// CacheExperts is how many experts the store keeps between uses.
	CacheExperts int
	// Backend computes the expert FFNs; nil means kernels.Default().
	Backend kernels.Backend
	// Drives, MirrorLast and HeatHalfLife are experts.Options'.
	Drives       []experts.Drive
	MirrorLast   bool
	HeatHalfLife int
}

// A probe reads the routed experts of one checkpoint through a store,
// without a model.
type probe struct {
	store *experts.Store
	be    kernels.Backend
	x     []float32 // [k3Latent] the FFN input, a fixed pattern
}

// openProbe lists dir's MXFP4 routed experts (experts.Spans: the headers
// only) and opens a store over them.
func openProbe(ctx context.Context, dir string, o probeOptions) (*probe, error) {
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
	spans, err := experts.Spans(ctx, dir, nil)
	if err != nil {
		return nil, err
	}
	s, err := experts.Open(ctx, experts.Options{Dir: dir, Spans: spans, Mode: mode, CacheExperts: o.CacheExperts,
		Drives: o.Drives, MirrorLast: o.MirrorLast, HeatHalfLife: o.HeatHalfLife})
	if err != nil {
		return nil, err
	}
	p := &probe{store: s, be: o.Backend, x: make([]float32, k3Latent)}
	for i := range p.x {
		p.x[i] = float32(i%7-3) / 8
	}
	return p, nil
}

// Read reads the experts ids of layer and waits until all have arrived.
func (p *probe) Read(ctx context.Context, layer int, ids []int) error {
	return p.Step(ctx, layer, ids, -1, nil, false)
}

// Step is one MoE layer of a synthetic decode step: it acquires the
// experts ids of layer (their reads start), prefetches nextIDs of
// nextLayer (none when nextLayer < 0), and, as each expert arrives, runs
// its FFN (K3's shapes) on one of the cores when compute is set (else only
// waits).
func (p *probe) Step(ctx context.Context, layer int, ids []int, nextLayer int, nextIDs []int, compute bool) error {
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
		wg.Go(func() {
			dst := make([]float32, k3Latent)
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
				e, err := experts.View(data, k3Inter, k3Latent)
				if err != nil {
					errs[w] = err
					return
				}
				p.be.ExpertFFN(dst, e, k3Act, p.x, 1)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Stats returns the store's counters since openProbe.
func (p *probe) Stats() experts.Stats { return p.store.Stats() }

// Close closes the store and its shards.
func (p *probe) Close() error { return p.store.Close() }
