package kernels

import "sort"

// Side is where ExpertFFNOn runs an expert: PlanExperts' answer for each.
type Side uint8

const (
	// OnCPU: the CPU, every thread of it.
	OnCPU Side = iota
	// OnCPUBesideGPU: the CPU while the GPU runs others of the group,
	// with a thread or two fewer (a split's beside backend) so that the
	// goroutine feeding the GPU finds a core the moment it wakes. On the
	// H200 host a 4,096-token prompt's GPU experts took 20 ms a call
	// while 16 CPU workers ran beside them, against 5 ms alone: each of
	// the call's copies and waits queued behind the workers for a core.
	OnCPUBesideGPU
	// OnGPU: the split's prefill (GPU) backend.
	OnGPU
)

// PlanExperts shares a prompt's group of experts of one layer between the
// two sides of a split backend: plan[i] is where the expert with ns[i]
// positions runs (ExpertFFNOn); when any goes to the GPU the CPU's are
// OnCPUBesideGPU. proto is one of them, for
// the shapes and for whether the model's experts are resident (all or
// none are: in RAM for the model's life, or streamed).
//
// The experts the rule keeps from the GPU stay on the CPU; the others are
// taken largest first and each goes to the side that then finishes first
// by the rule's cost model (AccelOptions.ExpertGPUFixed and
// ExpertGPUSpeedup, in positions of the CPU's expert FFN), so that the
// CPU, idle while the GPU computes, takes its share of a long prompt. The
// plan depends on the positions alone, never on timings: the same prompt
// gives the same bits. A backend that is not a split runs everything
// itself (all OnCPU).
func PlanExperts(be Backend, proto Expert, ns []int) []Side {
	plan := make([]Side, len(ns))
	s, ok := be.(split)
	if !ok {
		return plan
	}
	gpu := planGPU(s, proto, ns)
	any := false
	for _, g := range gpu {
		any = any || g
	}
	for i, g := range gpu {
		switch {
		case g:
			plan[i] = OnGPU
		case any:
			plan[i] = OnCPUBesideGPU
		}
	}
	return plan
}

// planGPU is PlanExperts' choice of the GPU's experts.
func planGPU(s split, proto Expert, ns []int) []bool {
	plan := make([]bool, len(ns))
	var eligible []int
	cpu := 0.0 // the CPU side's cost so far
	for i, n := range ns {
		if s.plannable(n, proto) {
			eligible = append(eligible, i)
		} else {
			cpu += float64(n)
		}
	}
	if s.rule == nil || s.rule.ExpertGPUSpeedup <= 0 {
		for _, i := range eligible {
			plan[i] = true
		}
		return plan
	}
	sort.SliceStable(eligible, func(a, b int) bool { return ns[eligible[a]] > ns[eligible[b]] })
	gpu := 0.0
	for _, i := range eligible {
		n := float64(ns[i])
		if g := gpu + s.rule.ExpertGPUFixed + n/s.rule.ExpertGPUSpeedup; g <= cpu+n {
			plan[i], gpu = true, g
		} else {
			cpu += n
		}
	}
	return plan
}

// ExpertFFNOn is be.ExpertFFN on the side PlanExperts chose; a backend
// that is not a split runs it itself.
func ExpertFFNOn(be Backend, on Side, dst []float32, e Expert, act Activation, x []float32, n int) {
	s, ok := be.(split)
	if !ok {
		be.ExpertFFN(dst, e, act, x, n)
		return
	}
	side, gpu := s.side(on)
	if n > 1 {
		defer s.meter.time(gpu, kindExperts, n)()
	}
	side.ExpertFFN(dst, e, act, x, n)
}

// ExpertGroupFFNOn is ExpertGroupFFN on the side PlanExperts chose for
// every expert of es (the GPU's share of a group, in one call there).
func ExpertGroupFFNOn(be Backend, on Side, dst [][]float32, es []Expert, act Activation, x [][]float32, ns []int) {
	s, ok := be.(split)
	if !ok {
		ExpertGroupFFN(be, dst, es, act, x, ns)
		return
	}
	side, gpu := s.side(on)
	total := 0
	for _, n := range ns {
		total += n
	}
	defer s.meter.timeCalls(gpu, kindExperts, len(es), total)()
	ExpertGroupFFN(side, dst, es, act, x, ns)
}

// side is the backend that runs an expert PlanExperts put on, and whether
// it is the GPU.
func (s split) side(on Side) (Backend, bool) {
	switch {
	case on == OnGPU:
		return s.prefill, true
	case on == OnCPUBesideGPU && s.beside != nil:
		return s.beside, false
	}
	return s.decode, false
}

// plannable reports whether the rule lets PlanExperts give the GPU an
// expert of n positions: onGPU's rule, with ExpertMinPositions in place of
// StreamedMinPositions where it is set.
func (s split) plannable(n int, proto Expert) bool {
	if s.rule != nil && s.rule.ExpertMinPositions > 0 {
		if n < s.rule.ExpertMinPositions {
			return false
		}
		n = max(n, s.rule.StreamedMinPositions)
	}
	return s.onGPU(n, expertIntensity(proto), proto.W1, proto.W2, proto.W3)
}
