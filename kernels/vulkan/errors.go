package vulkan

import "errors"

var (
	// ErrUnsupported reports a build without the Vulkan backend (no cgo, or
	// not Linux).
	ErrUnsupported = errors.New("vulkan: not supported in this build (needs linux and cgo)")
	// ErrNoDevice reports that the Vulkan loader found no usable device.
	ErrNoDevice = errors.New("vulkan: no usable device")
	// ErrDevice reports a Vulkan call that failed on an opened device.
	ErrDevice = errors.New("vulkan: device error")
)

// DeviceType is a Vulkan physical device type (VkPhysicalDeviceType).
type DeviceType int

const (
	Integrated DeviceType = 1
	Discrete   DeviceType = 2
	Virtual    DeviceType = 3
	CPU        DeviceType = 4 // software: lavapipe (llvmpipe)
)

func (t DeviceType) String() string {
	switch t {
	case Integrated:
		return "integrated"
	case Discrete:
		return "discrete"
	case Virtual:
		return "virtual"
	case CPU:
		return "cpu"
	}
	return "other"
}

// DefaultPreference is the order Open("vulkan") takes devices in: a
// discrete GPU first, the software rasteriser last.
var DefaultPreference = []DeviceType{Discrete, Integrated, Virtual, CPU}

// Info describes the opened device.
type Info struct {
	Name      string
	Type      DeviceType
	API       string // Vulkan version the device reports, "1.3.230"
	MaxBuffer int    // largest storage buffer a shader binds
	LocalHeap int64  // the largest device-local memory heap, bytes
	// TransferQueue: the operands' copies run on a transfer-only queue
	// (the GPU's copy engines), beside the shaders.
	TransferQueue bool
	// BackQueue: the results' copies back that end a call run on a
	// second transfer queue, beside the next call's shaders.
	BackQueue bool
}

// Hardware reports whether t is a GPU (not the software rasteriser).
func (t DeviceType) Hardware() bool { return t == Discrete || t == Integrated || t == Virtual }
