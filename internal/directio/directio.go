package directio

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Mode is how the expert store reads shard files. Routed experts are 25 GB
// of traffic per K3 token, read once and dropped (or kept in the store's own
// cache): left to the page cache they would evict the resident spine, so the
// default bypasses it. bench slice measures all three on the machine at hand;
// STREAMING.md records why direct is the default.
type Mode uint8

const (
	// Direct bypasses the page cache: O_DIRECT on Linux (aligned offsets,
	// lengths and buffers), F_NOCACHE on macOS.
	Direct Mode = iota
	// Buffered reads through the page cache.
	Buffered
	// DropBehind reads through the page cache and then tells the kernel to
	// drop the range (posix_fadvise DONTNEED on Linux; F_NOCACHE on macOS).
	DropBehind
)

func (m Mode) String() string {
	switch m {
	case Direct:
		return "direct"
	case Buffered:
		return "buffered"
	case DropBehind:
		return "drop-behind"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// ParseMode reads the names String returns.
func ParseMode(s string) (Mode, error) {
	for _, m := range []Mode{Direct, Buffered, DropBehind} {
		if m.String() == s {
			return m, nil
		}
	}
	return 0, fmt.Errorf("unknown I/O mode %q (direct, buffered or drop-behind)", s)
}

// Align is the alignment of direct reads: offsets, lengths and buffer
// addresses. 4096 covers every logical block size we meet (512 on virtio,
// 4096 on NVMe, 16 KiB pages on Apple silicon only matter for no-copy Metal
// buffers, which the buffers below also satisfy when allocated from BufAlign).
const Align = 4096

// BufAlign is the address alignment of read buffers: 16 KiB, the Apple
// silicon page size, so a buffer can later be wrapped without copying.
const BufAlign = 16 << 10

// Open opens a shard for reading in the given mode. The per-OS body sets
// O_DIRECT or F_NOCACHE; a filesystem that refuses O_DIRECT (tmpfs) falls back
// to a buffered descriptor, which Open reports through direct=false.
func Open(path string, mode Mode) (f *os.File, direct bool, err error) {
	return openOS(path, mode)
}

// DropRange tells the kernel the range will not be read again soon.
func DropRange(f *os.File, off, n int64) { dropRangeOS(f, off, n) }

// Buffer returns a zeroed slice of n bytes whose address is a multiple
// of BufAlign. Go's allocator hands big objects page-aligned spans, but does
// not promise 16 KiB, so over-allocate and slice.
func Buffer(n int) []byte {
	b := make([]byte, n+BufAlign)
	off := 0
	if r := int(Addr(b) % BufAlign); r != 0 {
		off = BufAlign - r
	}
	return b[off : off+n : off+n]
}

// AlignDown and AlignUp round to Align.
func AlignDown(x int64) int64 { return x &^ (Align - 1) }
func AlignUp(x int64) int64   { return (x + Align - 1) &^ (Align - 1) }

// ReadFull reads until buf is full or the file ends. A direct read that
// comes back short has met the end of the file: asking again at an
// unaligned offset would fail with EINVAL instead of reporting it.
func ReadFull(fd int, buf []byte, off int64, direct bool) (int64, error) {
	var got int64
	for got < int64(len(buf)) {
		n, err := unix.Pread(fd, buf[got:], off+got)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return got, err
		}
		if n == 0 {
			break
		}
		got += int64(n)
		if direct && n%Align != 0 {
			break
		}
	}
	return got, nil
}
