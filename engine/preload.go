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
// goroutine of its own (then the experts a model keeps in RAM), while the caller goes on (the GPU backend takes
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
	if !kernels.Preloads(m.backend) {
		return
	}
	// Then the experts a model holds in RAM (a small one's, all of them).
	keyed := m.w.keyed
	if ram, ok := m.experts.(*ramExperts); ok {
		for _, l := range ram.layers {
			for _, e := range l {
				keyed = append(keyed, e.W1, e.W3, e.W2)
			}
		}
	}
	if len(keyed) == 0 {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &preloader{cancel: cancel, done: make(chan struct{})}
	m.preload = p
	go func() {
		defer close(p.done)
		for _, w := range keyed {
			if ctx.Err() != nil || !kernels.Preload(m.backend, w) {
				return
			}
		}
	}()
}

// WaitPreload returns once the pinned spine is on the GPU as far as its
// budget allows (at once when the backend keeps no weights, or the copying
// ended), or with ctx's error. A prompt need not wait: it runs beside the
// copying; a benchmark that times a prompt of a model already open (as a
// user's is, once the app has loaded it) does.
func (m *Model) WaitPreload(ctx context.Context) error {
	if m.preload == nil {
		return nil
	}
	select {
	case <-m.preload.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stop ends the copying and waits for it; nil does nothing.
func (p *preloader) stop() {
	if p != nil {
		p.cancel()
		<-p.done
	}
}
