package kernels_test

import (
	"testing"

	"github.com/deltafin/deltafin/kernels"
	"github.com/deltafin/deltafin/kernels/conformance"
)

// TestElementwiseConformance holds the elementwise exp and σ of every CPU
// backend (avx512, avx2, neon, c, and the reference twin) to the float64
// oracle, at 1 and 3 threads and one per core.
func TestElementwiseConformance(t *testing.T) {
	t.Parallel()
	conformance.Elementwise(t, cpuAtThreads(t)...)
}

// BenchmarkElementwise compares every CPU backend's kernel with the
// reference twin (the engine's float64 math.Exp loops as they were) over
// one K3 token's gates.
func BenchmarkElementwise(b *testing.B) {
	var bs []kernels.Backend
	for _, name := range kernels.Available() {
		be, err := kernels.ByName(name)
		if err != nil {
			b.Fatal(err)
		}
		if kernels.IsCPU(be) {
			bs = append(bs, be)
		}
	}
	for _, op := range []kernels.ElemOp{kernels.ElemExp, kernels.ElemSigmoid} {
		conformance.BenchElementwise(b, op, 12288, bs...)
	}
}
