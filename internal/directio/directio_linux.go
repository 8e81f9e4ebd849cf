package directio

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

func openOS(path string, mode Mode) (*os.File, bool, error) {
	if mode == Direct {
		f, err := os.OpenFile(path, os.O_RDONLY|unix.O_DIRECT, 0)
		if err == nil {
			return f, true, nil
		}
		// tmpfs and some overlay filesystems refuse O_DIRECT with EINVAL;
		// read them buffered with drop-behind instead of failing.
		if !errors.Is(err, unix.EINVAL) {
			return nil, false, err
		}
	}
	f, err := os.Open(path)
	return f, false, err
}

func dropRangeOS(f *os.File, off, n int64) {
	// Advice only: an error changes nothing about correctness.
	_ = unix.Fadvise(int(f.Fd()), off, n, unix.FADV_DONTNEED)
}
