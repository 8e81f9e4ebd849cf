//go:build linux && cgo

package vulkan

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/deltafin/deltafin/kernels"
	"github.com/deltafin/deltafin/kernels/conformance"
)

// BenchmarkAttention is one layer's prefill attention on the device and,
// in the same run, on the fastest CPU backend (the limit to report the
// device against): k3-tiny's heads and K3's head shape. GFLOP/s counts
// 2·(qk+dv) per visible (query, key) pair and head.
func BenchmarkAttention(b *testing.B) {
	dev := device(b)
	for _, c := range []conformance.AttnCase{
		{T: 4096, Heads: 4, QK: 24, DV: 16, Spread: 1},
		{T: 2048, Heads: 16, QK: 192, DV: 128, Spread: 1},
	} {
		a := conformance.NewAttn(rand.New(rand.NewPCG(1, 1)), c)
		flops := float64(c.T) * float64(c.T+1) / 2 * float64(c.Heads) * 2 * float64(c.QK+c.DV)
		for _, be := range []kernels.Backend{dev, kernels.Default()} {
			b.Run(fmt.Sprintf("%s/%s", be.Name(), c), func(b *testing.B) {
				for b.Loop() {
					if err := kernels.Attention(b.Context(), be, a); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
	if err := dev.Err(); err != nil {
		b.Fatal(err)
	}
}
