package engine

import (
	"math/rand/v2"
	"path/filepath"
	"sort"
	"testing"

	"github.com/deltafin/deltafin/kernels"
	"github.com/stretchr/testify/require"
)

// TestPromptExpertsOnBothSides: a prompt's experts that the backend sends
// to its GPU run on a goroutine of their own beside the CPU's, as one
// kernels.ExpertGroupFFN call (moe.go's runExperts). Over a split whose two sides are the same CPU kernels, with a
// rule that lets about half of k3-tiny's experts go, and with one that
// lets all go and has kernels.PlanExperts share them, both sides run
// experts and the logits are those of the CPU kernels alone, bit for bit:
// the overlap changes which goroutine computes, never what, and so does
// the CPU's running its experts on other threads beside the GPU's.
func TestPromptExpertsOnBothSides(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "testdata", "k3-tiny")
	ids := make([]int, 300) // 1,200 (token, slot) pairs over 32 experts: about 37 each
	for i := range ids {
		ids[i] = (i*131 + 5) % 1000
	}
	cpu := kernels.Default()
	alone, err := Open(t.Context(), dir, Options{Backend: cpu})
	require.NoError(t, err)
	t.Cleanup(func() { _ = alone.Close() })
	want, err := alone.NewSession().Forward(t.Context(), ids, true)
	require.NoError(t, err)
	// The CPU's experts beside the GPU's run on other threads (as "auto"
	// has them: kernels.BesideThreads), the same bits.
	beside, err := kernels.Open("cpu", kernels.Threads(cpu)+1)
	require.NoError(t, err)

	for _, rule := range []kernels.AccelOptions{
		{StreamedMinPositions: 38},                     // about half may go, and all that may go do
		{StreamedMinPositions: 2, ExpertGPUSpeedup: 1}, // every one may: the plan shares them
	} {
		both := kernels.WithBeside(kernels.Accelerate(cpu, cpu, rule), beside)
		m, err := Open(t.Context(), dir, Options{Backend: both})
		require.NoError(t, err)
		t.Cleanup(func() { _ = m.Close() })
		before, _ := kernels.Routes(both)
		got, err := m.NewSession().Forward(t.Context(), ids, true)
		require.NoError(t, err)
		after, _ := kernels.Routes(both)
		d := after.Sub(before)
		t.Logf("%+v: experts on the GPU side %d, on the CPU side %d", rule, d.GPU.Experts.Calls, d.CPU.Experts.Calls)
		require.Positive(t, d.GPU.Experts.Calls, "no expert went to the offloaded side")
		require.Positive(t, d.CPU.Experts.Calls, "no expert stayed on the caller's side")
		require.Equal(t, want, got)
	}
}

// topK is a stable sort by value, descending, cut to k: checked against
// one on rows with many ties (values of few levels) at every k.
func TestTopKIsStableSort(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	for range 200 {
		x := make([]float32, 1+rng.IntN(40))
		for i := range x {
			x[i] = float32(rng.IntN(5)) - 2
		}
		idx := make([]int, len(x))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return x[idx[a]] > x[idx[b]] })
		for k := 1; k <= len(x); k++ {
			require.Equal(t, idx[:k], topK(x, k), "%v, k %d", x, k)
		}
	}
}
