// Package safetensors parses the header of a safetensors file: the tensor
// names, dtypes, shapes and absolute byte ranges. It sits between the disk (or
// the downloader's range requests) and the engine, and never reads tensor
// data itself.
//
// Every length is bounded and every range is checked against the file size,
// so a hostile or truncated file yields an error naming the file and the
// tensor, never a panic or an out-of-range read.
package safetensors
