//go:build !linux && !darwin

package engine

import "os"

// openShardOS reads through the page cache where there is no portable way to
// bypass it.
func openShardOS(path string, _ ioMode) (*os.File, bool, error) {
	f, err := os.Open(path)
	return f, false, err
}

func dropRangeOS(*os.File, int64, int64) {}
