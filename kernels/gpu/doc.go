// Package gpu is the part of the GPU kernels backends that does not depend
// on the graphics API: kernels.Backend over a Device that holds numbered buffers and runs the compute shaders of
// kernels/shaders in order. kernels/vulkan (Linux, tested here on lavapipe)
// and kernels/metal (macOS) provide the Device; everything else, from the
// row blocking to the push constants and the CPU fallback, is this package
// and is exercised by the Vulkan conformance tests. Its place in the data
// flow is the kernels' (downloader → disk → engine → kernels → tokens).
//
// Calls are serialised; each copies its operands into the device's buffers
// (weights with a kernels.Matrix.Key only once: they stay in device memory,
// resident.go), records the copies to the device, its dispatches and the
// copy of its result back, submits and waits (backend.go, ops.go, attn.go;
// group.go runs a prompt's group of experts as one call, each product one
// dispatch over all of them; peak.go runs the FMA peak shader; clock.go
// reads the device's own timestamps of its shaders and copies, which the
// benchmarks report beside the host's clock; pipeline.go cuts streamed
// weights into pieces, each one call, so that on a Pipeliner the host
// copies the next piece into a second slot set while the device runs the
// one before; pieces.go runs a product over resident weights in pieces
// of positions the same way, the activations' copies under the shaders;
// shared.go runs several such products over one input as one call a piece).
// When the device fails (or an
// operand exceeds its limits) the call is computed on the CPU instead, by the
// fallback kernels.Backend, and Err reports why.
package gpu
