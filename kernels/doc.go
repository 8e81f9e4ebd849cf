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
// CGO_ENABLED=0. Faster backends implement the same Backend interface and are
// checked against the reference.
package kernels
