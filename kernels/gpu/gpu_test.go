//go:build linux && cgo

// The driver's own decisions (row blocks, limits, CPU fallback) on the
// Vulkan device; the arithmetic is kernels/vulkan's conformance suite.
package gpu_test

import (
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

	t.Run("row tiles of 128 beyond the dispatch limit loop in the shader", func(t *testing.T) {
		b := gpu.New("vulkan", small{dev, 3, 1 << 20}, nil)
		b.SetBigTileMinGroups(1)
		for _, dt := range []kernels.DType{kernels.BF16, kernels.I8, kernels.MXFP4, kernels.F16} {
			w := conformance.RandMatrix(rng, dt, 401, 96)
			x := conformance.RandVec(rng, 70*96)
			want, got := make([]float32, 70*401), make([]float32, 70*401)
			kernels.Ref().MatMul(want, w, x, 70)
			b.MatMul(got, w, x, 70)
			require.Equal(t, -1, conformance.Worst(want, got, conformance.MatMulTol(w, x, 70)), dt.String())
			require.NoError(t, b.Err())
		}
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
}
