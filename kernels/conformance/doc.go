// Package conformance is the one conformance suite of the kernels backends:
// Run holds any kernels.Backend (every CPU instruction set in package
// kernels' tests, Vulkan in kernels/vulkan's, Metal in kernels/metal's) to
// the pure-Go reference on the same cases, with random matrices in the
// value ranges of real weights and tolerances whose derivation is in
// kernels/README.md (≤ 4·u·√cols·Σ|w·x| per dot product, carried through
// the activation for the expert FFN). It is test support beside kernels in
// the data flow (downloader → disk → engine → kernels → tokens) and is
// imported by tests only.
package conformance
