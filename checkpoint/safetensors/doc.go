// Package safetensors parses the header of a safetensors file: the tensor
// names, dtypes, shapes and absolute byte ranges. It sits between the disk (or
// the downloader's range requests) and the engine, and never reads tensor
// data itself.
//
// Every length is bounded and every range is checked against the file size,
// so a hostile or truncated file yields an error naming the file and the
// tensor, never a panic or an out-of-range read.
//
// The header JSON and a sharded checkpoint's index are read by a scanner
// of their own (scan.go), linear and with a few allocations per file: the
// full K3's 96 headers and index list 497,220 tensors, and encoding/json
// spent seconds on them in garbage collection.
package safetensors
