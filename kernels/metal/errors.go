package metal

import "errors"

var (
	// ErrUnsupported reports a build without the Metal backend (not darwin,
	// or no cgo).
	ErrUnsupported = errors.New("metal: not supported in this build (needs darwin and cgo)")
	// ErrNoDevice reports that no Metal device has the capabilities the
	// kernels need.
	ErrNoDevice = errors.New("metal: no capable device")
	// ErrDevice reports a Metal call that failed on an opened device.
	ErrDevice = errors.New("metal: device error")
)
