package kernels

import (
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
	exec := func(*task, int, int, int, []float32) {
		arrived.Add(1)
		deadline := time.Now().Add(2 * time.Second)
		for arrived.Load() < 2 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Microsecond)
		}
		if arrived.Load() == 2 {
			overlapped.Add(1)
		}
	}
	var tasks taskPool
	var bufs bufPool
	for i, idle := range []time.Duration{0, 10 * spinFor, 0, 10 * spinFor} {
		time.Sleep(idle)
		arrived.Store(0)
		overlapped.Store(0)
		tk := tasks.getFor(0, &bufs, exec)
		tk.nphase, tk.rows[0], tk.chunk[0] = 1, 2, 1
		p.run(tk)
		tasks.put(tk)
		require.EqualValues(t, 2, overlapped.Load(), "call %d after %v idle: the helper did not join", i, idle)
	}
}
