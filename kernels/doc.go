// Package kernels is the arithmetic at the bottom of the data flow:
// downloader → disk → engine → kernels.
//
// The engine hands it weight matrices exactly as they sit on disk (BF16, F16,
// F32, per-row INT8 or MXFP4 bytes, viewed without copying) and fp32
// activations; kernels returns fp32 results. It knows nothing of layers,
// experts or files.
//
// Every operation has an obvious pure-Go reference (ref.go), which is the
// oracle for the conformance tests and the engine's path when built with
// CGO_ENABLED=0. The fast backends are C through cgo (kern*.c), one row
// kernel per dtype and instruction set: avx512 and avx2 on amd64 (chosen at
// run time from golang.org/x/sys/cpu), neon on arm64, and portable c
// everywhere. They share one driver (fast.go): a persistent worker pool
// (pool.go) in which the caller and NumCPU−1 helper goroutines each run a
// contiguous part of the rows, chunk by chunk (one cgo call per chunk), then
// steal chunks from the parts left, with tasks and scratch recycled so that
// a warm call allocates nothing. Each output row is
// one dot product by one thread, so results do not depend on the thread
// count. Besides the products, two pieces of the engine's layers run here
// for their SIMD kernels: tiled attention (attn.go; a GPU has a shader of
// its own), the KDA delta rule (deltarule.go) and the KDA short conv +
// SiLU (shortconv.go), and the elementwise exp and σ of the engine's
// gates and decays (elementwise.go), the last three on the CPU whatever
// the backend. Default picks the fastest CPU backend; ByName("ref") and the
// app's DELTAFIN_KERNELS pick another.
//
// GPU backends (kernels/vulkan, kernels/metal over kernels/gpu) register
// themselves; "auto" (the app's default) puts a hardware GPU beside the CPU
// through Accelerate (split.go), which sends each product where the device
// machine's benchmark found it faster. A Matrix.Key marks weights that
// never change, which a GPU may keep in its own memory.
package kernels
