//go:build linux && cgo

package vulkan

/*
#cgo CFLAGS: -O2 -std=c11
#cgo LDFLAGS: -ldl -lpthread
#include <stdlib.h>
#include "vk.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"time"
	"unsafe"

	"github.com/deltafin/deltafin/kernels"
	"github.com/deltafin/deltafin/kernels/gpu"
	"github.com/deltafin/deltafin/kernels/shaders"
)

func init() {
	kernels.Register("vulkan", func() (kernels.Backend, error) { return openShared() })
	// The engine's "auto" takes a hardware GPU only; probing for one is
	// cheap (an instance and a device list, no pipelines), so a machine
	// with only lavapipe or no loader pays nearly nothing.
	kernels.RegisterAccelerator("vulkan", func() (kernels.Backend, error) {
		if !HasHardware() {
			return nil, fmt.Errorf("%w: no hardware GPU", ErrNoDevice)
		}
		return openShared()
	})
}

// openShared opens the backend once per process, so that "vulkan" by name and
// "auto" share one device and its resident weights.
var openShared = sync.OnceValues(func() (*gpu.Backend, error) { return Open() })

// HasHardware reports whether the Vulkan loader sees a hardware GPU
// (discrete, integrated or virtual), without opening it.
func HasHardware() bool {
	found := int(C.dfvk_probe())
	if found < 0 {
		return false
	}
	for t := Integrated; t <= CPU; t++ {
		if found&(1<<int(t)) != 0 && t.Hardware() {
			return true
		}
	}
	return false
}

// Device is one Vulkan device with a compute pipeline per shader; it
// implements gpu.Device.
type Device struct {
	c      *C.dfvk
	info   Info
	groups int
	pipe   map[string]C.int
}

var _ gpu.Device = (*Device)(nil)

// Open returns the "vulkan" backend on the first device of the preferred
// types (DefaultPreference when none are given); calls the device cannot
// run go to the fastest CPU backend.
func Open(prefer ...DeviceType) (*gpu.Backend, error) {
	d, err := OpenDevice(prefer...)
	if err != nil {
		return nil, err
	}
	return gpu.New("vulkan", d, nil), nil
}

// OpenDevice opens the first device of the preferred types (DefaultPreference
// when none are given) that has a compute queue.
func OpenDevice(prefer ...DeviceType) (*Device, error) {
	if len(prefer) == 0 {
		prefer = DefaultPreference
	}
	pref := make([]C.int, len(prefer))
	for i, t := range prefer {
		pref[i] = C.int(t)
	}
	// The SPIR-V goes to C in C memory (cgo forbids Go pointers to Go
	// pointers); vkCreateShaderModule copies it.
	n := len(shaders.Names())
	code := unsafe.Slice((**C.uint32_t)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof((*C.uint32_t)(nil))))), n)
	sizes := make([]C.size_t, n)
	defer func() {
		for _, p := range code {
			C.free(unsafe.Pointer(p))
		}
		C.free(unsafe.Pointer(&code[0]))
	}()
	pipe := map[string]C.int{}
	for i, name := range shaders.Names() {
		spv, err := shaders.SPIRV(name)
		if err != nil {
			return nil, err
		}
		code[i] = (*C.uint32_t)(C.CBytes(spv))
		sizes[i] = C.size_t(len(spv))
		pipe[name] = C.int(i)
	}
	var info C.dfvk_info
	var cerr [256]C.char
	var c *C.dfvk
	res := C.dfvk_open(&c, &pref[0], C.int(len(pref)), &code[0], &sizes[0], C.int(n), &info, &cerr[0], C.int(len(cerr)))
	if res != 0 {
		return nil, fmt.Errorf("%w: %s", ErrNoDevice, C.GoString(&cerr[0]))
	}
	api := uint32(info.api)
	return &Device{
		c: c,
		info: Info{
			Name:          C.GoString(&info.name[0]),
			Type:          DeviceType(info._type),
			API:           fmt.Sprintf("%d.%d.%d", api>>22, (api>>12)&0x3ff, api&0xfff),
			MaxBuffer:     int(min(uint64(info.maxBuffer), 1<<30)),
			LocalHeap:     int64(info.localHeap),
			TransferQueue: info.transferQueue != 0,
			BackQueue:     info.backQueue != 0,
		},
		groups: int(min(uint32(info.maxGroups), 65535)),
		pipe:   pipe,
	}, nil
}

// Info describes the device.
func (d *Device) Info() Info { return d.info }

// Describe is "NAME (TYPE, Vulkan X.Y.Z)", with ", copies on a transfer
// queue" where the operands' copies have a queue of their own, and
// ", results back on another" where the copies back have one too.
func (d *Device) Describe() string {
	s := fmt.Sprintf("%s (%s, Vulkan %s", d.info.Name, d.info.Type, d.info.API)
	if d.info.TransferQueue {
		s += ", copies on a transfer queue"
	}
	if d.info.BackQueue {
		s += ", results back on another"
	}
	return s + ")"
}

// MaxBuffer is the device's storage-buffer range, capped at 1 GiB.
func (d *Device) MaxBuffer() int { return d.info.MaxBuffer }

// MaxGroups is the dispatch limit per dimension, capped at 65535.
func (d *Device) MaxGroups() int { return d.groups }

func check(what string, r C.int) error {
	if r != 0 {
		return fmt.Errorf("%w: %s: VkResult %d", ErrDevice, what, int(r))
	}
	return nil
}

// Slot returns slot i's mapped memory, at least n bytes.
func (d *Device) Slot(i, n int) ([]byte, error) {
	var res C.int
	p := C.dfvk_slot(d.c, C.int(i), C.uint64_t(n), &res)
	if p == nil {
		return nil, check(fmt.Sprintf("allocating %d bytes", n), min(res, -1))
	}
	return unsafe.Slice((*byte)(p), max(n, 1))[:n], nil
}

// Dispatch records one shader run over the given slots (bindings 1..n).
func (d *Device) Dispatch(shader string, slots []int, push []uint32, gx, gy int) error {
	idx, ok := d.pipe[shader]
	if !ok {
		return fmt.Errorf("%w: no shader %q", ErrDevice, shader)
	}
	cs := make([]C.int, max(len(slots), 1))
	for i, s := range slots {
		cs[i] = C.int(s)
	}
	pc := make([]C.uint32_t, max(len(push), 1))
	for i, v := range push {
		pc[i] = C.uint32_t(v)
	}
	r := C.dfvk_dispatch(d.c, idx, &cs[0], C.int(len(slots)), unsafe.Pointer(&pc[0]), C.int(4*len(push)),
		C.uint32_t(gx), C.uint32_t(gy), 1)
	return check("dispatch "+shader, r)
}

// ToDevice records the copy of slot i's first n bytes to the device-local
// twin the shaders read (nothing on an integrated GPU).
func (d *Device) ToDevice(i, n int) error {
	return check(fmt.Sprintf("copying %d bytes of slot %d to the device", n, i), C.dfvk_copy(d.c, C.int(i), C.uint64_t(n)))
}

// ToHost records the copy of the first n bytes of slot i's twin back to
// its mapped memory, which Slot returns after Submit (dfvk_back).
func (d *Device) ToHost(i, n int) error {
	return check(fmt.Sprintf("copying %d bytes of slot %d to the host", n, i), C.dfvk_back(d.c, C.int(i), C.uint64_t(n)))
}

// Begin starts recording a call (on frame 0).
func (d *Device) Begin() error { return d.BeginFrame(0) }

// Submit runs the recorded call and waits for it.
func (d *Device) Submit() error { return check("submit", C.dfvk_submit(d.c, 1)) }

var _ gpu.Pipeliner = (*Device)(nil)

// BeginFrame starts recording a call on frame f (0 or 1), after that
// frame's last call has finished.
func (d *Device) BeginFrame(f int) error { return check("begin", C.dfvk_begin(d.c, C.int(f))) }

// SubmitAsync starts the recorded call and returns; Wait on its frame
// waits for it.
func (d *Device) SubmitAsync() error { return check("submit", C.dfvk_submit(d.c, 0)) }

// Wait waits for frame f's call, if one is running.
func (d *Device) Wait(f int) error { return check("wait", C.dfvk_wait(d.c, C.int(f))) }

var _ gpu.Clock = (*Device)(nil)

// DeviceTimes is the device's time in the shaders and in the copies of
// every call so far, by its own timestamps around each operation; ok is
// false where the queue has no timestamps.
func (d *Device) DeviceTimes() (shaders, copies time.Duration, ok bool) {
	var s, c C.uint64_t
	ok = C.dfvk_times(d.c, &s, &c) != 0
	return time.Duration(s), time.Duration(c), ok
}

// Timing turns the device's timestamps on (the default, where it has
// them) or off for the calls begun from now on, after those still running
// (dfvk_timing). Untimed calls add nothing to DeviceTimes and keep no
// spans; a benchmark times a call both ways to see what the timestamps,
// their resets and the waits they imply cost it. Not between BeginFrame
// and its submission; an error where the device has no timestamps to turn
// on.
func (d *Device) Timing(on bool) error {
	return check("turning the timestamps on or off", C.dfvk_timing(d.c, cbool(on)))
}

// hostResets chooses who resets the calls' timestamps (dfvk_host_resets):
// the host, as on a Vulkan 1.2 device, or the calls' own commands, as on
// an older one; the tests run both on lavapipe.
func (d *Device) hostResets(on bool) error {
	return check("choosing who resets the timestamps", C.dfvk_host_resets(d.c, cbool(on)))
}

var _ gpu.Tracer = (*Device)(nil)

// Trace starts (on) or stops keeping each call's span on the device's
// clock, forgetting those kept so far (dfvk_trace).
func (d *Device) Trace(on bool) {
	C.dfvk_trace(d.c, cbool(on))
}

// Spans hands over the spans kept since Trace or the last Spans, oldest
// first: at most the first DFVK_SPANS calls of those.
func (d *Device) Spans() []gpu.Span {
	var buf [C.DFVK_SPANS]C.dfvk_span
	n := int(C.dfvk_spans(d.c, &buf[0], C.DFVK_SPANS))
	out := make([]gpu.Span, n)
	pair := func(v [2]C.uint64_t) [2]time.Duration {
		return [2]time.Duration{time.Duration(v[0]), time.Duration(v[1])}
	}
	for i, s := range buf[:n] {
		out[i] = gpu.Span{Start: time.Duration(s.start), CopiesIn: pair(s.in), Shaders: pair(s.sh), CopiesBack: pair(s.back)}
	}
	return out
}

// ResidentBudget is how many bytes of weights may stay on the device: three
// quarters of its largest device-local heap; none on an integrated GPU,
// whose heap is the host RAM the engine already holds the weights in (a copy
// would double the pinned spine). lavapipe, a test device, keeps them.
func (d *Device) ResidentBudget() int64 {
	if d.info.Type == Integrated {
		return 0
	}
	return d.info.LocalHeap / 4 * 3
}

// Upload copies data into a new device-local buffer; the id it returns is
// used like a slot until Free.
func (d *Device) Upload(data []byte) (int, error) {
	var id C.int
	var p unsafe.Pointer
	if len(data) > 0 {
		p = unsafe.Pointer(&data[0])
	}
	if err := check(fmt.Sprintf("uploading %d bytes", len(data)), C.dfvk_upload(d.c, p, C.uint64_t(len(data)), &id)); err != nil {
		return 0, err
	}
	return int(id), nil
}

// Free releases a buffer from Upload.
func (d *Device) Free(id int) { C.dfvk_free(d.c, C.int(id)) }

// cbool is on as the C side's flag.
func cbool(on bool) C.int {
	if on {
		return 1
	}
	return 0
}
