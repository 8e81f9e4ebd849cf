//go:build !(linux && cgo)

package vulkan

import "github.com/deltafin/deltafin/kernels"

// Backend is the Vulkan backend; in this build it cannot be opened.
type Backend struct{ kernels.Backend }

// Open reports ErrUnsupported: the Vulkan backend needs linux and cgo.
func Open(...DeviceType) (*Backend, error) { return nil, ErrUnsupported }

// Info is empty in this build.
func (*Backend) Info() Info { return Info{} }

// Err is nil in this build.
func (*Backend) Err() error { return nil }
