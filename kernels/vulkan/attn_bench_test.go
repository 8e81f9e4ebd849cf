//go:build linux && cgo

package vulkan

import (
	"testing"

	"github.com/deltafin/deltafin/kernels"
	"github.com/deltafin/deltafin/kernels/conformance"
)

// BenchmarkAttention is one layer's prefill attention on the device and,
// in the same run, on the fastest CPU backend (the limit to report the
// device against): k3-tiny's heads and K3's head shape.
func BenchmarkAttention(b *testing.B) {
	dev := device(b)
	conformance.BenchAttention(b, []conformance.AttnCase{
		{T: 4096, Heads: 4, QK: 24, DV: 16, Spread: 1},
		{T: 2048, Heads: 16, QK: 192, DV: 128, Spread: 1},
	}, dev, kernels.Default())
	if err := dev.Err(); err != nil {
		b.Fatal(err)
	}
}
