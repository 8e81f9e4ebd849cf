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
	require.Equal(t, []bool{true, false, true, false, false, false}, PlanExperts(Accelerate(Ref(), Ref(), rule), e, ns))

	rule.ExpertGPUSpeedup = 0
	require.Equal(t, []bool{true, true, true, false, true, false}, PlanExperts(Accelerate(Ref(), Ref(), rule), e, ns))
	require.Equal(t, []bool{true, true, true, true, true, true}, PlanExperts(Split(Ref(), Ref()), e, ns), "Split: every batch to its prefill side")
	require.Equal(t, make([]bool, len(ns)), PlanExperts(Ref(), e, ns))

	// Ties keep the group's order, so the plan is the same every time.
	rule.ExpertGPUSpeedup = 1
	rule.ExpertGPUFixed = 0
	require.Equal(t, []bool{true, false, true, false}, PlanExperts(Accelerate(Ref(), Ref(), rule), e, []int{20, 20, 20, 20}))
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

	var gpu, cpu []int
	s := Accelerate(counting{Ref(), &gpu}, counting{Ref(), &cpu}, AccelOptions{StreamedMinPositions: 1000})
	before, _ := Routes(s)
	got := make([]float32, 5*64)
	ExpertFFNOn(s, true, got, e, act, x, 5) // the rule alone would keep 5 positions on the CPU
	require.Equal(t, want, got)
	ExpertFFNOn(s, false, got, e, act, x, 5)
	require.Equal(t, want, got)
	after, _ := Routes(s)
	d := after.Sub(before)
	require.Equal(t, []int{-5}, gpu)
	require.Equal(t, []int{-5}, cpu)
	require.Equal(t, int64(1), d.GPU.Experts.Calls)
	require.Equal(t, int64(1), d.CPU.Experts.Calls)
	require.Equal(t, int64(5), d.CPU.Experts.Positions)

	ExpertFFNOn(Ref(), true, got, e, act, x, 5) // not a split: itself
	require.Equal(t, want, got)
}
