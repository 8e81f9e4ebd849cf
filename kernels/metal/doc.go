// Package metal is the GPU kernels backend on the Mac: kernels.Backend
// (through kernels/gpu) on the Metal device, running the
// Metal Shading Language that SPIRV-Cross generated from the same SPIR-V the
// Vulkan backend runs (kernels/shaders). Its place in the data flow is the
// kernels' (downloader → disk → engine → kernels → tokens).
//
// The Objective-C (metal_darwin.m) is limited to the device, buffers,
// pipeline states and command buffers; everything else is kernels/gpu,
// whose arithmetic and driver logic are tested on Linux through the Vulkan
// backend on lavapipe. THIS CODE NEEDS macOS: it is built only with darwin
// and cgo, and it has not been built or run here (no macOS SDK on the
// Linux development and CI machines). What is checked here: the
// Objective-C is type-checked by clang for arm64 macOS against macshim/,
// the declarations of Foundation, Metal and libc it uses as Apple documents
// them (checkobjc.sh, in make test; it found that dfmtl_upload's parameter
// named id hid Objective-C's id type, so the file did not compile), the
// Go half translated by cgo with the same clang and vetted for
// darwin/arm64, and the MSL by kernels/shaders/mslcheck.sh.
// Other builds get Open returning ErrUnsupported (metal_other.go, tested on
// Linux).
//
// The device is taken by capability, never by chip name: the system default
// device must support the Metal 3 family (or Apple7 / Mac2), 64-thread
// threadgroups, the 32 KiB of threadgroup memory attn's shader takes, and
// 256 MiB buffers;
// the MSL is compiled with fast math off, so exp, division and square root
// keep the precision the conformance tolerances assume. Without such a
// device Open fails and the engine stays on the CPU kernels ("gpu" in
// kernels.ByName falls back to them automatically); a call the device
// cannot take runs on the fastest CPU backend.
package metal
