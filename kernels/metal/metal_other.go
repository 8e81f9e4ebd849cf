//go:build !(darwin && cgo)

package metal

import "github.com/deltafin/deltafin/kernels/gpu"

// Device is the Metal device; in this build none can be opened.
type Device struct{}

// Open reports ErrUnsupported: the Metal backend needs darwin and cgo.
func Open() (*gpu.Backend, error) { return nil, ErrUnsupported }

// OpenDevice reports ErrUnsupported: the Metal backend needs darwin and cgo.
func OpenDevice() (*Device, error) { return nil, ErrUnsupported }
