package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrWrite wraps every failure of WriteFile.
var ErrWrite = errors.New("atomicfile: write")

// WriteFile replaces path with data: a temporary file in the same directory
// (so the rename stays on one file system), fsync, chmod to perm, rename,
// fsync of the directory (so the rename itself survives a crash). On any
// failure before the rename the temporary file is removed and path is left
// as it was. The directory must exist.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("%w %s: %w", ErrWrite, path, err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, perm)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("%w %s: %w", ErrWrite, path, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("%w %s: sync dir: %w", ErrWrite, path, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("%w %s: sync dir: %w", ErrWrite, path, err)
	}
	return nil
}
