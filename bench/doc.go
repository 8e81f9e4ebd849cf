// Package bench holds Deltafin's benchmarks and synthetic checkpoints,
// apart from the product packages that run a token: it drives them
// through their public API only (downloader → disk → engine → kernels →
// tokens, measured from outside). Kernels is `deltafin bench kernels`: the
// memory read limit (kernels.MemoryRead) and every kernel's weight
// bandwidth against it, on K3's shapes.
package bench
