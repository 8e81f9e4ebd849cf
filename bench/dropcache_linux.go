package bench

import (
	"os"

	"golang.org/x/sys/unix"
)

// dropRange tells the kernel the range will not be read again soon, so the
// slice's pages leave the page cache (n = 0: to the end of the file).
func dropRange(f *os.File, off, n int64) {
	// Advice only: an error changes nothing about correctness.
	_ = unix.Fadvise(int(f.Fd()), off, n, unix.FADV_DONTNEED)
}
