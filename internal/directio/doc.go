// Package directio reads files past the page cache: the open modes (direct,
// buffered, drop-behind), the 4096-byte alignment of direct reads, buffers
// aligned for them, a positional read that stops at the end of the file,
// and File, a checkpoint Source that reads directly where it can.
//
// Routed experts are read once per token and dropped; through the page
// cache they would evict the resident spine. The engine's spine loader and
// ring, the expert store and the expert drives all read this way.
//
//	directio.go        Mode, Open, DropRange, Buffer, AlignDown/AlignUp, ReadFull
//	directio_linux.go  O_DIRECT (tmpfs falls back to buffered) and fadvise
//	directio_darwin.go F_NOCACHE
//	directio_other.go  the page cache, where there is no way around it
//	addr.go            a buffer's address, for alignment checks
//	file.go            File: a Source over a local file, direct where aligned
package directio
