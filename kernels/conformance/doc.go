// Package conformance holds what the backend conformance tests of the GPU
// backends (kernels/vulkan, kernels/metal) share: random matrices with the
// value ranges of real weights, and the tolerances against the pure-Go
// references (the same bounds as kernels' own conformance tests, whose
// derivation is in kernels/README.md). It is test support beside kernels in
// the data flow (downloader → disk → engine → kernels → tokens) and is
// imported by tests only.
package conformance
