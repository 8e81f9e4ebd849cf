package kernels

import "sort"

// PlanExperts shares a prompt's group of experts of one layer between the
// two sides of a split backend: plan[i] reports whether the expert with
// ns[i] positions runs on the GPU (ExpertFFNOn). proto is one of them, for
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
// itself (all false).
func PlanExperts(be Backend, proto Expert, ns []int) []bool {
	plan := make([]bool, len(ns))
	s, ok := be.(split)
	if !ok {
		return plan
	}
	var eligible []int
	cpu := 0.0 // the CPU side's cost so far
	for i, n := range ns {
		if s.onGPU(n, expertIntensity(proto), proto.W1, proto.W2, proto.W3) {
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

// ExpertFFNOn is be.ExpertFFN on the side PlanExperts chose: the GPU when
// gpu, else the CPU; a backend that is not a split runs it itself.
func ExpertFFNOn(be Backend, gpu bool, dst []float32, e Expert, act Activation, x []float32, n int) {
	s, ok := be.(split)
	if !ok {
		be.ExpertFFN(dst, e, act, x, n)
		return
	}
	side := s.decode
	if gpu {
		side = s.prefill
	}
	if n > 1 {
		defer s.meter.time(gpu, kindExperts, n)()
	}
	side.ExpertFFN(dst, e, act, x, n)
}
