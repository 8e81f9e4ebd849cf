package kernels

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The FMA loop must do every step on every lane it claims (the lanes' sum
// is the proof), whichever instruction set's loop the build selected.
func TestFMAPeakDoesTheFMAsItCounts(t *testing.T) {
	t.Parallel()
	// lanes lanes starting at 0..lanes-1, n steps of v·a + b each.
	want := func(lanes, n int, a, b float64) float64 {
		var s float64
		for j := range lanes {
			v := float64(j)
			for range n {
				v = v*a + b
			}
			s += v
		}
		return s
	}
	for _, n := range []int{0, 1, 7, 1000, 1 << 16} {
		lanes, sum := fmaLoop(n, 1, 1)
		require.GreaterOrEqual(t, lanes, 8, "%d steps", n)
		require.Equal(t, float64(lanes*(lanes-1)/2+lanes*n), sum, "%d steps, %d lanes", n, lanes)
		gl, gs := fmaGo(n, 1, 1)
		require.Equal(t, float64(gl*(gl-1)/2+gl*n), gs, "Go twin, %d steps", n)
		for _, threads := range []int{0, 1, 3} {
			flops, s := FMAPeak(threads, n)
			th := max(threads, 1)
			require.Equal(t, uint64(2*th*lanes*n), flops, "%d steps, %d threads", n, threads)
			require.Equal(t, float64(th)*float64(lanes*(lanes-1)/2+lanes*n), s, "%d steps, %d threads", n, threads)
		}
	}
	// Other factors: the loop multiplies as well as adds (a = 1/2 halves
	// each lane before adding; every value here is exact in fp32).
	lanes, sum := fmaLoop(3, 0.5, 2)
	require.Equal(t, want(lanes, 3, 0.5, 2), sum)
	gl, gs := fmaGo(3, 0.5, 2)
	require.Equal(t, want(gl, 3, 0.5, 2), gs)
	// Every instruction set's loop this CPU runs, not only the best one.
	for _, isa := range fastISAs() {
		for _, n := range []int{0, 5, 1 << 12} {
			lanes, sum := fmaLoopISA(isa.isa, n, 1, 1)
			require.GreaterOrEqual(t, lanes, 8, isa.name)
			require.Equal(t, float64(lanes*(lanes-1)/2+lanes*n), sum, "%s, %d steps", isa.name, n)
		}
		lanes, sum := fmaLoopISA(isa.isa, 3, 0.5, 2)
		require.Equal(t, want(lanes, 3, 0.5, 2), sum, isa.name)
	}
}

// Each instruction set's FMA loop on one core, in GFLOP/s (the Go twin as
// "go"): which loops saturate the FMA units, for `bench kernels`' peak.
func BenchmarkFMALoop(b *testing.B) {
	const n = 1 << 16
	run := func(b *testing.B, loop func() (int, float64)) {
		var flops float64
		for b.Loop() {
			lanes, _ := loop()
			flops += 2 * float64(lanes) * n
		}
		b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	}
	for _, isa := range fastISAs() {
		b.Run(isa.name, func(b *testing.B) { run(b, func() (int, float64) { return fmaLoopISA(isa.isa, n, 1, 1) }) })
	}
	b.Run("go", func(b *testing.B) { run(b, func() (int, float64) { return fmaGo(n, 1, 1) }) })
}
