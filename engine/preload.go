package engine

import (
	"context"

	"github.com/deltafin/deltafin/kernels"
)

// A GPU that keeps keyed weights in its memory (kernels.Accelerate over a
// discrete GPU) copies a pinned matrix there the first time a product
// uses it, inside that product's call: a model's first prompt paid for
// the whole pinned spine crossing the bus (on the H200 host, a K3 slice's
// first 4,096-token prompt spent a share of its GPU time so; bench slice
// reports it as "copied … to stay resident"). Open therefore starts
// copying the pinned spine at once, in the order a pass uses it, on a
// goroutine of its own, while the caller goes on (the GPU backend takes
// one matrix at a time under its lock, so a prompt's products interleave
// with the copies); it stops when the GPU's budget is full. Close stops
// it and waits. The bits do not change: a resident copy is the same
// bytes through the same shader.

type preloader struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// startPreload starts copying m's pinned matrices to the backend's GPU,
// when it keeps them (kernels.Preloads).
func (m *Model) startPreload() {
	if !kernels.Preloads(m.backend) || len(m.w.keyed) == 0 {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &preloader{cancel: cancel, done: make(chan struct{})}
	m.preload = p
	go func() {
		defer close(p.done)
		for _, w := range m.w.keyed {
			if ctx.Err() != nil || !kernels.Preload(m.backend, w) {
				return
			}
		}
	}()
}

// stop ends the copying and waits for it; nil does nothing.
func (p *preloader) stop() {
	if p != nil {
		p.cancel()
		<-p.done
	}
}
