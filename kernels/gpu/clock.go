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

// A Span is one call on the device's own clock (Tracer): when its
// operands' copies, its shaders and its copies back began and ended, each
// pair zero where the call had none, and Start, when the compute queue
// took the call up (its wait for the copies in over, before its own
// preamble: the query resets and the barrier that orders it after the
// calls before). Spans of calls in a row show where the device sat idle
// between them and what held the next one back: its copies in starting
// late (the host's turn), ending late (the bus), or neither (the boundary
// between two calls itself: 60–100 µs on an H100, kernels/README.md,
// "Issue 33, thirteenth session"), which Start splits into the queue's
// turn from one submission to the next and the call's preamble
// (fourteenth session).
type Span struct {
	Start                         time.Duration
	CopiesIn, Shaders, CopiesBack [2]time.Duration
}

// A Tracer is a Device that keeps each call's Span while Trace is on, for
// a benchmark to read with Spans (oldest first, forgotten once read).
type Tracer interface {
	Trace(on bool)
	Spans() []Span
}

// Trace turns the device's spans on or off (Tracer); false where the
// device keeps none.
func (b *Backend) Trace(on bool) bool {
	t, ok := b.dev.(Tracer)
	if !ok {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	t.Trace(on)
	return true
}

// Spans hands over the spans the device kept since Trace (Tracer).
func (b *Backend) Spans() []Span {
	t, ok := b.dev.(Tracer)
	if !ok {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return t.Spans()
}
