//go:build linux && cgo

package vulkan

import (
	"math/rand/v2"
	"slices"
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

// Heads up to gpu.AttnMaxHead run on the device: query/key widths that
// take several chunks and a partial one, value heads over two slices of
// output columns (each slice a workgroup that recomputes the scores), at a
// cache offset inside a tile and with rows past T in the last block; and
// a prompt over more than one submission (rows from row0 on).
func TestAttentionWideHeads(t *testing.T) {
	b := device(t)
	for i, c := range []conformance.AttnCase{
		{T: 70, Past: 10, Heads: 2, QK: gpu.AttnMaxHead, DV: gpu.AttnMaxHead, Spread: 2},
		{T: 100, Past: 37, Heads: 1, QK: 200, DV: 130, Spread: 4},
		{T: 1100, Past: 5, Heads: 2, QK: 24, DV: 16, Spread: 3},
	} {
		t.Run(c.String(), func(t *testing.T) {
			a := conformance.NewAttn(rand.New(rand.NewPCG(5, uint64(i))), c)
			want := a
			want.Dst = make([]float32, len(a.Dst))
			kernels.AttentionRef(want)
			require.NoError(t, kernels.Attention(t.Context(), b, a))
			conformance.RequireWithin(t, want.Dst, a.Dst, conformance.AttnTol(a), "vulkan")
		})
	}
	require.NoError(t, b.Err(), "an attention call fell back to the CPU")
}

// A head wider than gpu.AttnMaxHead runs on the CPU fallback, exactly as
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

// Latent attention over kept weights runs on the device as one piece of
// work, and gives the steps' bits (the suite's LatentAttentionIsItsSteps
// checks them on every case); over weights the device does not keep, or for
// a single row, it runs the steps. Split sends it to the device as one
// piece where its steps would go there.
func TestLatentAttentionRunsAsOneCall(t *testing.T) {
	b := device(t)
	for _, c := range conformance.LatentCases() {
		t.Run(c.String(), func(t *testing.T) {
			a := conformance.NewLatent(rand.New(rand.NewPCG(8, uint64(c.T))), c)
			before := b.LatentCalls()
			require.NoError(t, kernels.LatentAttention(t.Context(), b, a))
			one := c.Keyed && c.T > 1
			require.Equal(t, one, b.LatentCalls() == before+1, "ran as one call")
			require.NoError(t, b.Err())
		})
	}
	s := kernels.Split(b, kernels.Default())
	c := conformance.LatentCases()[0]
	a := conformance.NewLatent(rand.New(rand.NewPCG(9, 9)), c)
	before := b.LatentCalls()
	require.NoError(t, kernels.LatentAttention(t.Context(), s, a))
	require.Equal(t, before+1, b.LatentCalls(), "split sent it to the device whole")

	// Under auto's rule 37 rows keep their attention on the CPU: the
	// steps, each where the rule sends it, with their bits.
	acc := kernels.Accelerate(b, kernels.Default(), kernels.DefaultAccelOptions())
	want, got := a, a
	want.Dst, want.K, want.V, want.KV = slices.Clone(a.Dst), slices.Clone(a.K), slices.Clone(a.V), slices.Clone(a.KV)
	require.NoError(t, kernels.LatentSteps(t.Context(), acc, want))
	require.NoError(t, kernels.LatentAttention(t.Context(), acc, got))
	require.Equal(t, before+1, b.LatentCalls(), "the steps")
	require.Equal(t, want.Dst, got.Dst)
}
