package engine

import (
	"fmt"
	"os"
)

// ioMode is how the expert store reads shard files. Routed experts are 25 GB
// of traffic per K3 token, read once and dropped (or kept in the store's own
// cache): left to the page cache they would evict the resident spine, so the
// default bypasses it. bench slice measures all three on the machine at hand;
// STREAMING.md records why direct is the default.
type ioMode uint8

const (
	// ioDirect bypasses the page cache: O_DIRECT on Linux (aligned offsets,
	// lengths and buffers), F_NOCACHE on macOS.
	ioDirect ioMode = iota
	// ioBuffered reads through the page cache.
	ioBuffered
	// ioDropBehind reads through the page cache and then tells the kernel to
	// drop the range (posix_fadvise DONTNEED on Linux; F_NOCACHE on macOS).
	ioDropBehind
)

func (m ioMode) String() string {
	switch m {
	case ioDirect:
		return "direct"
	case ioBuffered:
		return "buffered"
	case ioDropBehind:
		return "drop-behind"
	}
	return fmt.Sprintf("ioMode(%d)", uint8(m))
}

// parseIOMode reads the names String returns.
func parseIOMode(s string) (ioMode, error) {
	for _, m := range []ioMode{ioDirect, ioBuffered, ioDropBehind} {
		if m.String() == s {
			return m, nil
		}
	}
	return 0, fmt.Errorf("engine: unknown I/O mode %q (direct, buffered or drop-behind)", s)
}

// ioAlign is the alignment of direct reads: offsets, lengths and buffer
// addresses. 4096 covers every logical block size we meet (512 on virtio,
// 4096 on NVMe, 16 KiB pages on Apple silicon only matter for no-copy Metal
// buffers, which the buffers below also satisfy when allocated from bufAlign).
const ioAlign = 4096

// bufAlign is the address alignment of read buffers: 16 KiB, the Apple
// silicon page size, so a buffer can later be wrapped without copying.
const bufAlign = 16 << 10

// openShard opens a shard for reading in the given mode. The per-OS body sets
// O_DIRECT or F_NOCACHE; a filesystem that refuses O_DIRECT (tmpfs) falls back
// to a buffered descriptor, which openShard reports through direct=false.
func openShard(path string, mode ioMode) (f *os.File, direct bool, err error) {
	return openShardOS(path, mode)
}

// dropRange tells the kernel the range will not be read again soon.
func dropRange(f *os.File, off, n int64) { dropRangeOS(f, off, n) }

// alignedBytes returns a zeroed slice of n bytes whose address is a multiple
// of bufAlign. Go's allocator hands big objects page-aligned spans, but does
// not promise 16 KiB, so over-allocate and slice.
func alignedBytes(n int) []byte {
	b := make([]byte, n+bufAlign)
	off := 0
	if r := int(addrOf(b) % bufAlign); r != 0 {
		off = bufAlign - r
	}
	return b[off : off+n : off+n]
}

// alignDown and alignUp round to ioAlign.
func alignDown(x int64) int64 { return x &^ (ioAlign - 1) }
func alignUp(x int64) int64   { return (x + ioAlign - 1) &^ (ioAlign - 1) }
