//go:build linux && cgo

// The driver's own decisions (row blocks, limits, CPU fallback) on the
// Vulkan device; the arithmetic is kernels/vulkan's conformance suite.
package gpu_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/kernels"
	"github.com/deltafin/deltafin/kernels/conformance"
	"github.com/deltafin/deltafin/kernels/gpu"
	"github.com/deltafin/deltafin/kernels/vulkan"
)

// small is the device with the dispatch and buffer limits of a small GPU.
type small struct {
	*vulkan.Device
	groups, buf int
}

func (s small) MaxGroups() int { return s.groups }
func (s small) MaxBuffer() int { return s.buf }

func TestLimitsSplitOrFallBack(t *testing.T) {
	dev, err := vulkan.OpenDevice()
	require.NoError(t, err, "make deps installs mesa-vulkan-drivers (lavapipe)")
	rng := rand.New(rand.NewPCG(1, 2))

	t.Run("rows beyond the dispatch limit loop in the shader", func(t *testing.T) {
		b := gpu.New("vulkan", small{dev, 3, 1 << 20}, nil)
		w := conformance.RandMatrix(rng, kernels.MXFP4, 50, 64)
		x := conformance.RandVec(rng, 3*64)
		want, got := make([]float32, 150), make([]float32, 150)
		kernels.Ref().MatMul(want, w, x, 3)
		b.MatMul(got, w, x, 3)
		require.Equal(t, -1, conformance.Worst(want, got, conformance.MatMulTol(w, x, 3)))
		require.NoError(t, b.Err())
	})

	t.Run("activations over 65535 workgroups use a 2-D grid", func(t *testing.T) {
		b := gpu.New("vulkan", small{dev, 2, 1 << 20}, nil) // 7·64 activations: 4×2 groups
		e := kernels.Expert{
			W1: conformance.RandMatrix(rng, kernels.BF16, 7*64, 32),
			W2: conformance.RandMatrix(rng, kernels.BF16, 32, 7*64),
			W3: conformance.RandMatrix(rng, kernels.BF16, 7*64, 32),
		}
		act := kernels.Activation{Kind: kernels.SiLU}
		x := conformance.RandVec(rng, 32)
		want, got := make([]float32, 32), make([]float32, 32)
		kernels.Ref().ExpertFFN(want, e, act, x, 1)
		b.ExpertFFN(got, e, act, x, 1)
		require.Equal(t, -1, conformance.Worst(want, got, conformance.FFNTol(e, act, x, 1)))
		require.NoError(t, b.Err())
	})

	t.Run("attention and KDA beyond the limits run on the CPU", func(t *testing.T) {
		b := gpu.New("vulkan", small{dev, 2, 1 << 20}, nil)
		const T, nh, qk, dv = 3, 4, 8, 8
		q, kc, vc := conformance.RandVec(rng, T*nh*qk), conformance.RandVec(rng, T*nh*qk), conformance.RandVec(rng, T*nh*dv)
		want, got := make([]float32, T*nh*dv), make([]float32, T*nh*dv)
		scale := float32(1 / math.Sqrt(qk))
		kernels.RefLayerOps().Attention(want, q, kc, vc, T, nh, qk, dv, 0, scale)
		b.Attention(got, q, kc, vc, T, nh, qk, dv, 0, scale)
		require.Equal(t, want, got)
		require.ErrorIs(t, b.Err(), gpu.ErrLimit)

		g, beta := make([]float32, T*nh*dv), make([]float32, T*nh)
		s1, s2 := conformance.RandVec(rng, nh*dv*dv), make([]float32, nh*dv*dv)
		copy(s2, s1)
		kernels.RefLayerOps().KDARecurrent(want, q, kc, vc, g, beta, s1, T, nh, dv)
		b.KDARecurrent(got, q, kc, vc, g, beta, s2, T, nh, dv)
		require.Equal(t, want, got)
		require.Equal(t, s1, s2)
		require.ErrorIs(t, b.Err(), gpu.ErrLimit)
	})
}
