//go:build linux && cgo

package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/kernels"
	_ "github.com/deltafin/deltafin/kernels/vulkan" // registers "vulkan" (lavapipe here)
)

// The GPU's peak through the peak shader on the Vulkan device (lavapipe in
// make test): a rate, with the shader's sums checked on every pass; the
// GPU of "gpu" (a Split) is found too, and a CPU backend has none.
func TestGPUPeakOnTheVulkanDevice(t *testing.T) {
	b, err := kernels.ByName("vulkan")
	require.NoError(t, err, "make deps installs mesa-vulkan-drivers (lavapipe)")
	p, ok := kernels.DevicePeakerOf(b)
	require.True(t, ok)
	peak, err := GPUPeak(t.Context(), p, time.Millisecond)
	require.NoError(t, err)
	require.Positive(t, peak)

	flops, sum, want, err := p.DeviceFMAPeak(3, 1000)
	require.NoError(t, err)
	require.Equal(t, uint64(2*32*1000*3*64), flops)
	require.Equal(t, want, sum)
	require.Equal(t, float64(3*64)*(496+32*1000), want)

	_, ok = gpuPeaker("vulkan+" + kernels.Default().Name())
	require.True(t, ok, "the GPU of a composite backend name")
	_, ok = gpuPeaker(kernels.Default().Name())
	require.False(t, ok, "a CPU backend has no GPU")
}
