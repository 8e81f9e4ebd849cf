package directio

import (
	"os"

	"golang.org/x/sys/unix"
)

// openOS sets F_NOCACHE for direct and drop-behind reads: macOS has no
// O_DIRECT and no posix_fadvise, and F_NOCACHE needs no alignment (aligned
// reads are still faster, which is why the store reads aligned ranges on
// every platform). Runs only on macOS; compile-checked on Linux.
func openOS(path string, mode Mode) (*os.File, bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false, err
	}
	if mode == Buffered {
		return f, false, nil
	}
	if _, err := unix.FcntlInt(f.Fd(), unix.F_NOCACHE, 1); err != nil {
		f.Close()
		return nil, false, err
	}
	return f, true, nil
}

// dropRangeOS has nothing to do: the descriptor already has F_NOCACHE.
func dropRangeOS(*os.File, int64, int64) {}
