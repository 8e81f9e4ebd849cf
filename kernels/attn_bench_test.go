package kernels_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/deltafin/deltafin/kernels"
	"github.com/deltafin/deltafin/kernels/conformance"
)

// BenchmarkAttention is one layer's prefill attention at k3-tiny's heads
// and at K3's head shape; GFLOP/s counts 2·(qk+dv) per visible (query,
// key) pair and head, for comparison with FMAPeak in the same run.
func BenchmarkAttention(b *testing.B) {
	for _, c := range []conformance.AttnCase{
		{T: 4096, Heads: 4, QK: 24, DV: 16, Spread: 1},
		{T: 1024, Heads: 8, QK: 192, DV: 128, Spread: 1},
	} {
		a := conformance.NewAttn(rand.New(rand.NewPCG(1, 1)), c)
		flops := float64(c.T) * float64(c.T+1) / 2 * float64(c.Heads) * 2 * float64(c.QK+c.DV)
		one, err := kernels.Open("cpu", 1)
		if err != nil {
			b.Fatal(err)
		}
		for _, be := range []kernels.Backend{kernels.Default(), one, kernels.Ref()} {
			b.Run(fmt.Sprintf("%s/t%d/%s", be.Name(), kernels.Threads(be), c), func(b *testing.B) {
				for b.Loop() {
					if err := kernels.Attention(b.Context(), be, a); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
