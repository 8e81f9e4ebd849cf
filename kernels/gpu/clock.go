package gpu

import (
	"time"

	"github.com/deltafin/deltafin/kernels"
)

// A Clock is a Device that times its own work: DeviceTimes is the device's
// time in the shaders and in the copies between host and device memory of
// every call so far, by timestamps the device writes around each
// operation (not the host's clock, which also sees the submission, the
// wait and the host's copies into the slots); ok is false where the device
// has no timestamps.
type Clock interface {
	DeviceTimes() (shaders, copies time.Duration, ok bool)
}

var _ kernels.DeviceTimer = (*Backend)(nil)

// DeviceTimes is the device's own time so far (Clock), ok false when the
// device keeps none.
func (b *Backend) DeviceTimes() (shaders, copies time.Duration, ok bool) {
	c, ok := b.dev.(Clock)
	if !ok {
		return 0, 0, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return c.DeviceTimes()
}
