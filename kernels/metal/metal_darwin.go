//go:build darwin && cgo

package metal

/*
#cgo CFLAGS: -x objective-c -O2
#cgo LDFLAGS: -framework Metal -framework Foundation
#include <stdlib.h>
#include "metal_darwin.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/deltafin/deltafin/kernels"
	"github.com/deltafin/deltafin/kernels/gpu"
	"github.com/deltafin/deltafin/kernels/shaders"
)

func init() {
	kernels.Register("metal", func() (kernels.Backend, error) { return openShared() })
	// Every Metal device that passes the capability check is a GPU: "auto"
	// takes it for prefill and resident decode (kernels.Accelerate).
	kernels.RegisterAccelerator("metal", func() (kernels.Backend, error) { return openShared() })
}

// openShared opens the backend once per process, so that "metal" by name and
// "auto" share one device and its resident weights.
var openShared = sync.OnceValues(func() (*gpu.Backend, error) { return Open() })

// Device is the Metal device with a pipeline state per shader; it
// implements gpu.Device.
type Device struct {
	c       *C.dfmtl
	name    string
	unified bool
	maxBuf  int
	working int64
	pipe    map[string]C.int
}

var _ gpu.Device = (*Device)(nil)

// Open returns the "metal" backend on the system's Metal device if it has
// the capabilities the shaders need; calls the device cannot run go to the
// fastest CPU backend.
func Open() (*gpu.Backend, error) {
	d, err := OpenDevice()
	if err != nil {
		return nil, err
	}
	return gpu.New("metal", d, nil), nil
}

// OpenDevice opens the system default Metal device, checked by capability
// (see the package doc), and compiles every shader.
func OpenDevice() (*Device, error) {
	n := len(shaders.Names())
	src := unsafe.Slice((**C.char)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof((*C.char)(nil))))), n)
	defer func() {
		for _, p := range src {
			C.free(unsafe.Pointer(p))
		}
		C.free(unsafe.Pointer(&src[0]))
	}()
	pipe := map[string]C.int{}
	for i, name := range shaders.Names() {
		msl, err := shaders.MSL(name)
		if err != nil {
			return nil, err
		}
		src[i] = C.CString(msl)
		pipe[name] = C.int(i)
	}
	var info C.dfmtl_info
	var cerr [512]C.char
	var c *C.dfmtl
	if C.dfmtl_open(&c, &src[0], C.int(n), &info, &cerr[0], C.int(len(cerr))) != 0 {
		return nil, fmt.Errorf("%w: %s", ErrNoDevice, C.GoString(&cerr[0]))
	}
	return &Device{
		c:       c,
		name:    C.GoString(&info.name[0]),
		unified: info.unified != 0,
		maxBuf:  int(min(uint64(info.maxBuffer), 1<<30)),
		working: int64(info.workingSet),
		pipe:    pipe,
	}, nil
}

// Describe is "NAME (Metal, unified memory)".
func (d *Device) Describe() string {
	if d.unified {
		return d.name + " (Metal, unified memory)"
	}
	return d.name + " (Metal)"
}

// MaxBuffer is the device's buffer limit, capped at 1 GiB per binding.
func (d *Device) MaxBuffer() int { return d.maxBuf }

// MaxGroups is the per-dimension threadgroup count the backend uses.
func (d *Device) MaxGroups() int { return 65535 }

// Slot returns slot i's shared-storage memory, at least n bytes.
func (d *Device) Slot(i, n int) ([]byte, error) {
	p := C.dfmtl_slot(d.c, C.int(i), C.uint64_t(n))
	if p == nil {
		return nil, fmt.Errorf("%w: allocating %d bytes in slot %d", ErrDevice, n, i)
	}
	return unsafe.Slice((*byte)(p), max(n, 1))[:n], nil
}

// ToDevice does nothing: the slots are shared storage, which the GPU reads
// where the host wrote it (unified memory).
func (d *Device) ToDevice(i, n int) error { return nil }

// ToHost does nothing, as ToDevice.
func (d *Device) ToHost(i, n int) error { return nil }

// Begin starts a command buffer.
func (d *Device) Begin() error {
	if C.dfmtl_begin(d.c) != 0 {
		return fmt.Errorf("%w: creating a command buffer", ErrDevice)
	}
	return nil
}

// Dispatch encodes one shader run over the given slots (buffers 1..n, the
// push constants in buffer 0).
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
	if C.dfmtl_dispatch(d.c, idx, &cs[0], C.int(len(slots)), unsafe.Pointer(&pc[0]), C.int(4*len(push)),
		C.uint32_t(gx), C.uint32_t(gy), C.uint32_t(shaders.LocalSizeOf(shader))) != 0 {
		return fmt.Errorf("%w: dispatching %s", ErrDevice, shader)
	}
	return nil
}

// Submit commits the command buffer and waits for it.
func (d *Device) Submit() error {
	if C.dfmtl_submit(d.c) != 0 {
		return fmt.Errorf("%w: command buffer failed", ErrDevice)
	}
	return nil
}

// ResidentBudget is three quarters of the device's recommended working set
// on a GPU with its own memory, and none on unified memory (every Apple
// silicon Mac): there a copy would double the pinned spine in the RAM the
// budget plans, so kernels.Accelerate treats keyed weights as streamed.
// Wrapping the spine's own pages (newBufferWithBytesNoCopy over page-aligned
// weights) would give the GPU them without a copy; not done yet.
func (d *Device) ResidentBudget() int64 {
	if d.unified {
		return 0
	}
	return d.working / 4 * 3
}

// Upload copies data into a new shared-storage buffer; on unified memory
// the GPU then reads it where it lies.
func (d *Device) Upload(data []byte) (int, error) {
	var id C.int
	var p unsafe.Pointer
	if len(data) > 0 {
		p = unsafe.Pointer(&data[0])
	}
	if C.dfmtl_upload(d.c, p, C.uint64_t(len(data)), &id) != 0 {
		return 0, fmt.Errorf("%w: keeping %d bytes on the device", ErrDevice, len(data))
	}
	return int(id), nil
}

// Free releases a buffer from Upload.
func (d *Device) Free(id int) { C.dfmtl_free(d.c, C.int(id)) }
