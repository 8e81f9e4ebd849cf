package kernels_test

import (
	"testing"

	"github.com/deltafin/deltafin/kernels"
	"github.com/deltafin/deltafin/kernels/conformance"
)

// BenchmarkAttention is one layer's prefill attention at k3-tiny's heads
// and at K3's head shape: the fastest backend on every core and on one,
// and the plain-Go tiles (ref).
func BenchmarkAttention(b *testing.B) {
	one, err := kernels.Open("cpu", 1)
	if err != nil {
		b.Fatal(err)
	}
	conformance.BenchAttention(b, []conformance.AttnCase{
		{T: 4096, Heads: 4, QK: 24, DV: 16, Spread: 1},
		{T: 1024, Heads: 8, QK: 192, DV: 128, Spread: 1},
	}, kernels.Default(), one, kernels.Ref())
}
