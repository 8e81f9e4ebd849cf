//go:build !linux && !darwin

package directio

import "os"

// openOS reads through the page cache where there is no portable way to
// bypass it.
func openOS(path string, _ Mode) (*os.File, bool, error) {
	f, err := os.Open(path)
	return f, false, err
}

func dropRangeOS(*os.File, int64, int64) {}
