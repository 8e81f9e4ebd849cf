package kernels

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBenchReportsEveryKernelAgainstTheMeasuredLimit(t *testing.T) {
	rep, err := Bench(t.Context(), BenchOptions{BufferBytes: 16 << 20, MinTime: time.Millisecond, Shrink: 64, Threads: 2})
	require.NoError(t, err)
	require.Equal(t, Default().Name(), rep.Backend)
	require.Positive(t, rep.MemReadGBps)
	require.Positive(t, rep.MemReadOneGBps)
	require.GreaterOrEqual(t, rep.BufferBytes, 16<<20)
	names := map[string]int{}
	for _, k := range rep.Kernels {
		require.Positive(t, k.GBps, k.Name)
		require.InDelta(t, k.GBps/rep.MemReadGBps, k.Ratio, 1e-9, k.Name)
		names[k.Name] += k.Threads
	}
	require.Len(t, names, 7, "six matrix kernels and the fused expert")
	all, err := Open("auto", 2)
	require.NoError(t, err)
	for name, threads := range names {
		require.Equal(t, Threads(all)+1, threads, "%s measured with all threads and with one", name)
	}
}
