package kernels

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPlanExpertsBalancesTheSides: the experts the rule keeps from the GPU
// stay on the CPU; the others, largest first, go to the side that then
// finishes first by the cost model; without a speedup every one the rule
// allows goes to the GPU; a backend that is not a split plans none.
func TestPlanExpertsBalancesTheSides(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(11, 12))
	e := Expert{W1: randMatrix(rng, BF16, 3, 64), W2: randMatrix(rng, BF16, 64, 3), W3: randMatrix(rng, BF16, 3, 64)}
	ns := []int{100, 50, 30, 5, 12, 8}
	rule := AccelOptions{StreamedMinPositions: 10, ExpertGPUFixed: 4, ExpertGPUSpeedup: 2}
	// 5 and 8 are below the rule: the CPU starts at 13. 100 → GPU (4 + 50
	// = 54 against 113); 50 → CPU (83 against 63); 30 → GPU (73 against
	// 93); 12 → CPU (83 against 75). The sides end at 73 and 75.
	// The CPU's run beside the GPU's.
	G, B := OnGPU, OnCPUBesideGPU
	require.Equal(t, []Side{G, B, G, B, B, B}, PlanExperts(Accelerate(Ref(), Ref(), rule), e, ns))

	rule.ExpertGPUSpeedup = 0
	require.Equal(t, []Side{G, G, G, B, G, B}, PlanExperts(Accelerate(Ref(), Ref(), rule), e, ns))
	require.Equal(t, []Side{G, G, G, G, G, G}, PlanExperts(Split(Ref(), Ref()), e, ns), "Split: every batch to its prefill side")
	require.Equal(t, make([]Side, len(ns)), PlanExperts(Ref(), e, ns))
	// None on the GPU: the CPU's with every thread.
	require.Equal(t, []Side{OnCPU, OnCPU}, PlanExperts(Accelerate(Ref(), Ref(), rule), e, []int{5, 8}))

	// ExpertMinPositions: the planned experts' threshold instead of
	// StreamedMinPositions (8 may go now, 5 still not).
	rule.ExpertMinPositions = 6
	require.Equal(t, []Side{G, G, G, B, G, G}, PlanExperts(Accelerate(Ref(), Ref(), rule), e, ns))
	rule.ExpertMinPositions = 0

	// Ties keep the group's order, so the plan is the same every time.
	rule.ExpertGPUSpeedup = 1
	rule.ExpertGPUFixed = 0
	require.Equal(t, []Side{G, B, G, B}, PlanExperts(Accelerate(Ref(), Ref(), rule), e, []int{20, 20, 20, 20}))
}

// TestExpertFFNOnRunsWhereTold: ExpertFFNOn runs on the side it is given,
// whatever the rule would say, counts the call on that side (Routes), and
// computes what the side's ExpertFFN computes.
func TestExpertFFNOnRunsWhereTold(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(13, 14))
	e := Expert{W1: randMatrix(rng, BF16, 3, 64), W2: randMatrix(rng, BF16, 64, 3), W3: randMatrix(rng, BF16, 3, 64)}
	act := Activation{Kind: SiLU}
	x := randVec(rng, 5*64)
	want := make([]float32, 5*64)
	Ref().ExpertFFN(want, e, act, x, 5)

	var gpu, cpu, beside []int
	s := WithBeside(Accelerate(counting{Ref(), &gpu}, counting{Ref(), &cpu}, AccelOptions{StreamedMinPositions: 1000}), counting{Ref(), &beside})
	before, _ := Routes(s)
	got := make([]float32, 5*64)
	ExpertFFNOn(s, OnGPU, got, e, act, x, 5) // the rule alone would keep 5 positions on the CPU
	require.Equal(t, want, got)
	ExpertFFNOn(s, OnCPU, got, e, act, x, 5)
	require.Equal(t, want, got)
	ExpertFFNOn(s, OnCPUBesideGPU, got, e, act, x, 5)
	require.Equal(t, want, got)
	after, _ := Routes(s)
	d := after.Sub(before)
	require.Equal(t, []int{-5}, gpu)
	require.Equal(t, []int{-5}, cpu)
	require.Equal(t, []int{-5}, beside)
	require.Equal(t, int64(1), d.GPU.Experts.Calls)
	require.Equal(t, int64(2), d.CPU.Experts.Calls, "beside the GPU is the CPU's side")
	require.Equal(t, int64(10), d.CPU.Experts.Positions)

	// Without a beside backend, OnCPUBesideGPU is the CPU's own.
	ExpertFFNOn(Accelerate(Ref(), counting{Ref(), &cpu}, AccelOptions{}), OnCPUBesideGPU, got, e, act, x, 5)
	require.Equal(t, []int{-5, -5}, cpu)

	ExpertFFNOn(Ref(), OnGPU, got, e, act, x, 5) // not a split: itself
	require.Equal(t, want, got)
}

// TestBesideThreads: the CPU beside a GPU leaves one thread in eight (at
// least one) to the goroutine feeding the GPU, and a machine of one or two
// cores keeps them all.
func TestBesideThreads(t *testing.T) {
	t.Parallel()
	for in, want := range map[int]int{1: 1, 2: 2, 3: 2, 8: 7, 16: 14, 24: 21} {
		require.Equal(t, want, BesideThreads(in), "%d threads", in)
	}
}

// grouping is a backend that runs a group of experts as one call (a GPU's
// kernels.ExpertGrouper), recording each call's counts.
type grouping struct {
	Backend
	calls *[][]int
}

func (g grouping) ExpertGroupFFN(dst [][]float32, es []Expert, act Activation, x [][]float32, ns []int) {
	*g.calls = append(*g.calls, append([]int(nil), ns...))
	for i, e := range es {
		g.Backend.ExpertFFN(dst[i], e, act, x[i], ns[i])
	}
}

// TestExpertGroupFFNOn: the GPU's share of a group reaches a grouping
// backend as one call, counted on the GPU's side as one call an expert
// with all their positions; a backend that does not group runs them one by
// one; the outputs are ExpertFFN's.
func TestExpertGroupFFNOn(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(15, 16))
	act := Activation{Kind: SiLU}
	ns := []int{5, 3, 7}
	es, xs, want, got := make([]Expert, 3), make([][]float32, 3), make([][]float32, 3), make([][]float32, 3)
	for i, n := range ns {
		es[i] = Expert{W1: randMatrix(rng, BF16, 3, 64), W2: randMatrix(rng, BF16, 64, 3), W3: randMatrix(rng, BF16, 3, 64)}
		xs[i] = randVec(rng, n*64)
		want[i], got[i] = make([]float32, n*64), make([]float32, n*64)
		Ref().ExpertFFN(want[i], es[i], act, xs[i], n)
	}
	var groups [][]int
	var cpu []int
	s := Accelerate(grouping{Ref(), &groups}, counting{Ref(), &cpu}, AccelOptions{StreamedMinPositions: 1000})
	before, _ := Routes(s)
	ExpertGroupFFNOn(s, OnGPU, got, es, act, xs, ns)
	require.Equal(t, want, got)
	require.Equal(t, [][]int{ns}, groups)
	d, _ := Routes(s)
	d = d.Sub(before)
	require.Equal(t, int64(3), d.GPU.Experts.Calls)
	require.Equal(t, int64(15), d.GPU.Experts.Positions)

	ExpertGroupFFNOn(s, OnCPU, got, es, act, xs, ns) // the CPU side does not group: one by one
	require.Equal(t, want, got)
	require.Equal(t, []int{-5, -3, -7}, cpu)
	require.Len(t, groups, 1)
}
