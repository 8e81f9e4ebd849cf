//go:build linux && cgo

package app

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/kernels"
)

// On this machine (make deps installs Mesa's lavapipe) the Vulkan backend
// is present: bench kernels reports it, and "gpu" selects it.
func TestVulkanBackendPresent(t *testing.T) {
	require.Contains(t, kernels.Registered(), "vulkan")
	b, err := kernels.ByName("gpu")
	require.NoError(t, err)
	require.Equal(t, "vulkan", b.Name())
	cfg := DefaultConfig(func(k string) string { return map[string]string{"DELTAFIN_KERNELS": "vulkan"}[k] })
	require.NoError(t, cfg.Validate())
}
