//go:build linux && cgo

package vulkan

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/kernels"
	"github.com/deltafin/deltafin/kernels/conformance"
	"github.com/deltafin/deltafin/kernels/gpu"
)

// TestAttentionConformance holds the device's attention shader to
// kernels.AttentionRef through the suite the CPU backends run, and checks
// that no case fell back to the CPU.
func TestAttentionConformance(t *testing.T) {
	b := device(t)
	conformance.Attention(t, b)
	require.NoError(t, b.Err(), "an attention call fell back to the CPU")
}

// A head wider than the shader holds runs on the CPU fallback, exactly as
// that backend computes it, and Err says why. Split (what "gpu" names:
// prompts on the device, decode tokens on the CPU) passes the same suite.
func TestAttentionFallbackAndSplit(t *testing.T) {
	b := device(t)
	a := conformance.NewAttn(rand.New(rand.NewPCG(3, 4)), conformance.AttnCase{T: 5, Heads: 1, QK: gpu.AttnMaxHead + 1, DV: 4, Spread: 1})
	want, got := a, a
	want.Dst, got.Dst = make([]float32, len(a.Dst)), make([]float32, len(a.Dst))
	require.NoError(t, kernels.Attention(t.Context(), b.Fallback(), want))
	require.NoError(t, kernels.Attention(t.Context(), b, got))
	require.Equal(t, want.Dst, got.Dst)
	require.ErrorIs(t, b.Err(), gpu.ErrLimit)

	s := kernels.Split(b, kernels.Default())
	conformance.Attention(t, s)
	require.NoError(t, b.Err())
}
