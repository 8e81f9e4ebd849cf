package kernels

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPoolHelpersJoinAfterParking posts calls of two chunks whose first
// chunk waits for the second to start: they overlap only if the helper
// joins, both while it still watches for posts and after it has parked.
func TestPoolHelpersJoinAfterParking(t *testing.T) {
	p := newPool(2)
	var arrived, overlapped atomic.Int32
	var both chan struct{} // closed when the second chunk starts
	exec := func(*task, int, int, int, []float32) {
		if arrived.Add(1) == 2 {
			close(both)
		}
		select {
		case <-both:
			overlapped.Add(1)
		case <-time.After(2 * time.Second): // the helper never came: fail, do not hang
		}
	}
	var tasks taskPool
	var bufs bufPool
	for i, parked := range []bool{false, true, false, true} {
		// The helper parks once it has seen no post for spinFor; wait for
		// that state itself, not for a time that should be long enough.
		for parked && p.parked.Load() < 1 {
			runtime.Gosched()
		}
		arrived.Store(0)
		overlapped.Store(0)
		both = make(chan struct{})
		tk := tasks.getFor(0, &bufs, exec)
		tk.nphase, tk.rows[0], tk.chunk[0] = 1, 2, 1
		p.run(tk)
		tasks.put(tk)
		require.EqualValues(t, 2, overlapped.Load(), "call %d (helper parked: %v): the helper did not join", i, parked)
	}
}
