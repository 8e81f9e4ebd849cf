// Package vulkan is the GPU kernels backend on Linux: kernels.Backend over
// the Vulkan C API through cgo (by way of kernels/gpu), running the SPIR-V
// compute shaders of kernels/shaders. It sits where the CPU kernels do in
// the data flow (downloader → disk → engine → kernels → tokens): the engine
// hands it weight bytes as they are on disk and fp32 activations.
//
// It exists so that the GPU arithmetic that the Mac runs through Metal (the
// same shaders, translated to MSL) is tested here: `make test` runs its
// conformance tests against the pure-Go references on Mesa's software
// Vulkan (lavapipe); on a machine with a GPU it runs there (a discrete GPU
// is preferred). Importing the package registers the backend as "vulkan"
// with kernels (kernels.ByName("vulkan"), DELTAFIN_KERNELS=vulkan).
//
// The Vulkan loader (libvulkan.so.1) is opened at run time with dlopen, not
// linked, so a binary built with this package starts on a machine without
// Vulkan, where Open reports ErrNoDevice.
//
// Every call copies its activations (and weights without a kernels.Matrix
// Key) into host-visible buffers and records two command buffers: the DMA
// of those operands into device memory, on a transfer-only queue where the
// device has one, and the shaders, which wait for it and write the call's
// results straight into host-visible memory; a call either waits or runs
// while the host stages the next (gpu.Pipeliner, two frames). Keyed
// weights are uploaded once to device-local memory. Calls are serialised.
// The C is vk.c (slots, calls, resident buffers), vkopen.c (the loader, the
// device and its queues) and vkint.h (what the two share); vk.h is what Go
// sees. Importing the package also offers the backend to "auto"
// (kernels.RegisterAccelerator) when a hardware GPU is present. When the device
// fails mid-call the call is computed by the fastest CPU backend instead
// and Err reports the failure. Builds without cgo or for
// other systems have Open return ErrUnsupported.
package vulkan
