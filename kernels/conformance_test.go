package kernels_test

import (
	"runtime"
	"slices"
	"testing"

	"github.com/deltafin/deltafin/kernels"
	"github.com/deltafin/deltafin/kernels/conformance"
)

// TestConformance holds every CPU backend this build and CPU have (avx512,
// avx2, neon, c) to the reference, at 1 thread, 3 (more than this
// machine's cores: a part per thread smaller than a CPU's) and one per
// core, and the reference itself, through the suite the GPU backends run
// too.
func TestConformance(t *testing.T) {
	t.Parallel()
	bs := []kernels.Backend{kernels.Ref()}
	threads := []int{1, 3}
	if n := runtime.NumCPU(); !slices.Contains(threads, n) {
		threads = append(threads, n)
	}
	for _, n := range threads {
		bs = append(bs, kernels.FastBackends(t, n)...)
	}
	conformance.Run(t, bs...)
}
