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
	"math"
	"sync"
	"unsafe"

	"github.com/deltafin/deltafin/kernels"
	"github.com/deltafin/deltafin/kernels/shaders"
)

func init() {
	kernels.Register("vulkan", func() (kernels.Backend, error) { return Open() })
}

// Backend runs the kernels on one Vulkan device.
type Backend struct {
	mu      sync.Mutex
	c       *C.dfvk
	info    Info
	maxBuf  int // bytes one binding may hold
	groups  int // dispatch limit per dimension
	pipe    map[string]C.int
	lastErr error
}

var _ kernels.Backend = (*Backend)(nil)
var _ kernels.LayerOps = (*Backend)(nil)

// Open creates a backend on the first device of the preferred types
// (DefaultPreference when none are given) that has a compute queue.
func Open(prefer ...DeviceType) (*Backend, error) {
	if len(prefer) == 0 {
		prefer = DefaultPreference
	}
	pref := make([]C.int, len(prefer))
	for i, t := range prefer {
		pref[i] = C.int(t)
	}
	// The SPIR-V goes to C in C memory (cgo forbids Go pointers to Go
	// pointers); vkCreateShaderModule copies it.
	n := len(shaders.Names)
	code := (*[1 << 10]*C.uint32_t)(C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof((*C.uint32_t)(nil)))))[:n:n]
	sizes := make([]C.size_t, n)
	defer func() {
		for _, p := range code {
			C.free(unsafe.Pointer(p))
		}
		C.free(unsafe.Pointer(&code[0]))
	}()
	pipe := map[string]C.int{}
	for i, name := range shaders.Names {
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
	b := &Backend{
		c: c,
		info: Info{
			Name:      C.GoString(&info.name[0]),
			Type:      DeviceType(info._type),
			API:       fmt.Sprintf("%d.%d.%d", api>>22, (api>>12)&0x3ff, api&0xfff),
			MaxBuffer: int(min(uint64(info.maxBuffer), 1<<30)),
		},
		groups: int(min(uint32(info.maxGroups), 65535)),
		pipe:   pipe,
	}
	b.maxBuf = b.info.MaxBuffer
	return b, nil
}

// Name is "vulkan".
func (b *Backend) Name() string { return "vulkan" }

// Info describes the device.
func (b *Backend) Info() Info { return b.info }

// Err returns the last device failure, after which that call was computed
// by the reference instead; nil when every call ran on the device.
func (b *Backend) Err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lastErr
}

// fail records err; the caller then computes the call on the CPU.
func (b *Backend) fail(err error) {
	b.lastErr = err
}

func check(what string, r C.int) error {
	if r != 0 {
		return fmt.Errorf("%w: %s: VkResult %d", ErrDevice, what, int(r))
	}
	return nil
}

// slot returns slot i's mapped memory, at least n bytes.
func (b *Backend) slot(i, n int) ([]byte, error) {
	var res C.int
	p := C.dfvk_slot(b.c, C.int(i), C.uint64_t(n), &res)
	if p == nil {
		return nil, check(fmt.Sprintf("allocating %d bytes", n), min(res, -1))
	}
	return unsafe.Slice((*byte)(p), max(n, 1)), nil
}

func (b *Backend) putBytes(i int, data []byte) error {
	m, err := b.slot(i, len(data))
	if err != nil {
		return err
	}
	copy(m, data)
	return nil
}

func (b *Backend) putF32(i int, v []float32) error {
	m, err := b.slot(i, 4*len(v))
	if err != nil {
		return err
	}
	if len(v) > 0 {
		copy(m, unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v)))
	}
	return nil
}

func (b *Backend) getF32(i int, v []float32) error {
	m, err := b.slot(i, 4*len(v))
	if err != nil {
		return err
	}
	if len(v) > 0 {
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v)), m)
	}
	return nil
}

// dispatch records one shader run over the given slots (bindings 1..n).
func (b *Backend) dispatch(shader string, slots []int, push []uint32, gx, gy, gz int) error {
	cs := make([]C.int, len(slots))
	for i, s := range slots {
		cs[i] = C.int(s)
	}
	pc := make([]C.uint32_t, max(len(push), 1))
	for i, v := range push {
		pc[i] = C.uint32_t(v)
	}
	r := C.dfvk_dispatch(b.c, b.pipe[shader], &cs[0], C.int(len(cs)), unsafe.Pointer(&pc[0]), C.int(4*len(push)),
		C.uint32_t(gx), C.uint32_t(gy), C.uint32_t(gz))
	return check("dispatch "+shader, r)
}

func (b *Backend) begin() error  { return check("begin", C.dfvk_begin(b.c)) }
func (b *Backend) submit() error { return check("submit", C.dfvk_submit(b.c)) }

// grid splits groups workgroups over x and y within the dispatch limit.
func (b *Backend) grid(groups int) (gx, gy int) {
	gx = max(min(groups, b.groups), 1)
	return gx, (groups + gx - 1) / gx
}

func f32bits(v float32) uint32 { return math.Float32bits(v) }
