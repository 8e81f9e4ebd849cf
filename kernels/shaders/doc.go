// Package shaders holds Deltafin's GPU kernels, written once as GLSL
// compute shaders (*.comp), with the SPIR-V that glslang compiles from them
// (*.spv, run by kernels/vulkan) and the Metal Shading Language that
// SPIRV-Cross translates from that SPIR-V (*.metal, run by kernels/metal).
// It sits beside kernels in the data flow (downloader → disk → engine →
// kernels → tokens): the GPU backends are kernels.Backends too.
//
// The generated files are committed; `make shaders` regenerates them with
// gen.sh and `make shaders-check` (part of `make test`) fails when they are
// stale, or when the MSL does not type-check: with no Mac here, mslcheck.sh
// parses each *.metal with clang's C++ for OpenCL front end against a
// stand-in metal_stdlib (mslshim/), which maps Metal's address spaces onto
// OpenCL's, so names, types, const and address spaces are checked, and
// reads each file for the kernel's attributes and Apple's threadgroup
// limits; Metal's own compiler and the results are not checked
// (kernels/metal's tests, on a Mac). Bindings: SPIR-V binding n is Metal buffer n; the push constants
// are Metal buffer 0, so every shader's storage buffers start at binding 1.
package shaders
