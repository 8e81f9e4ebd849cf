//go:build !(linux && cgo)

package vulkan

import "github.com/deltafin/deltafin/kernels/gpu"

// Device is the Vulkan device; in this build none can be opened.
type Device struct{}

// Open reports ErrUnsupported: the Vulkan backend needs linux and cgo.
func Open(...DeviceType) (*gpu.Backend, error) { return nil, ErrUnsupported }

// OpenDevice reports ErrUnsupported: the Vulkan backend needs linux and cgo.
func OpenDevice(...DeviceType) (*Device, error) { return nil, ErrUnsupported }

// HasHardware reports false: this build has no Vulkan backend.
func HasHardware() bool { return false }
