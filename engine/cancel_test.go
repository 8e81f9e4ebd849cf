package engine

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/experts"
)

// insideCtx ends inside a layer: armed after layer i−1 completes, it
// closes its Done channel at the n-th look at it from then on. Err stays
// nil until then, so the check at the layer boundary lets layer i start
// and only a check inside the layer (attention rows, delta-rule blocks)
// can see the end.
type insideCtx struct {
	context.Context
	mu     sync.Mutex
	armed  bool
	looks  int
	n      int
	done   chan struct{}
	closed time.Time
}

func newInsideCtx(n int) *insideCtx {
	return &insideCtx{Context: context.Background(), n: n, done: make(chan struct{})}
}

func (c *insideCtx) arm() {
	c.mu.Lock()
	c.armed = true
	c.mu.Unlock()
}

func (c *insideCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.armed && c.closed.IsZero() {
		if c.looks++; c.looks >= c.n {
			c.closed = time.Now()
			close(c.done)
		}
	}
	return c.done
}

func (c *insideCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed.IsZero() {
		return nil
	}
	return context.Canceled
}

// TestCancelInsideLayer: a 20k-position prefill (Kimi-Linear tiny's whole
// context of 4096 there) cancelled in the middle
// of an attention layer or a delta-rule layer returns ctx's error before
// that layer completes, on both tiny models (K3's recurrent KDA and
// Kimi-Linear's chunked one), and on k3-tiny with streamed experts, whose
// layers attend and route chunk by chunk. A whole MLA layer over 20k positions takes
// over a minute here; the time from the end of ctx to the return is
// logged.
func TestCancelInsideLayer(t *testing.T) {
	t.Parallel()
	ids := make([]int, 20000)
	for i := range ids {
		ids[i] = (i*7 + 3) % 500 // inside both vocabularies (1024 and 512)
	}
	streamed := experts.BudgetPlan{PinnedLayers: 1 << 20, CacheExperts: 64}
	for _, tc := range []struct {
		dir  string
		opts Options
	}{
		{filepath.Join("..", "testdata", "k3-tiny"), Options{}},
		{filepath.Join("..", "testdata", "kimi-linear-tiny", "hf"), Options{}},
		// Streamed experts: attention and routing chunk by chunk (attend.go).
		{filepath.Join("..", "testdata", "k3-tiny"), Options{Stream: &StreamOptions{Plan: &streamed}}},
	} {
		dir := tc.dir
		m, err := Open(t.Context(), dir, tc.opts)
		require.NoError(t, err)
		t.Cleanup(func() { _ = m.Close() })
		for _, kind := range []layerKind{layerMLA, layerKDA} {
			target := -1
			for i, k := range m.cfg.Kinds {
				if k == kind && i > 0 {
					target = i
					break
				}
			}
			require.NotEqual(t, -1, target)
			ctx := newInsideCtx(50)
			completed := false
			trace := func(layer int, _ []float32) {
				switch {
				case layer == target-1:
					ctx.arm()
				case layer >= target:
					completed = true
				}
			}
			n := min(len(ids), m.cfg.ContextLen) // Kimi-Linear tiny holds 4096
			_, err := m.NewSession().forward(ctx, ids[:n], false, trace)
			require.ErrorIs(t, err, context.Canceled, "%s layer %d", dir, target)
			require.False(t, completed, "%s: layer %d (%v) ran to its end after ctx ended", dir, target, kind)
			t.Logf("%s, %d positions: layer %d (kind %v) returned %v after ctx ended", dir, n, target, kind, time.Since(ctx.closed))
		}
	}
}
