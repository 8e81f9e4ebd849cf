package app

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrDemo wraps failures to unpack the built-in demo model.
var ErrDemo = errors.New("app: demo model")

// DemoLabel is how the menu and the API name the built-in model.
const DemoLabel = "demo model: random weights"

// InstallDemo unpacks the built-in demo checkpoint (k3-tiny, random
// weights, a few MB embedded in the binary) into dir, so that with nothing
// installed the server and the whole pipeline still work. Files already
// there with the right size are kept; others are written atomically.
func InstallDemo(model fs.FS, dir string) error {
	return fs.WalkDir(model, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("%w: %v", ErrDemo, err)
		}
		if d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return fmt.Errorf("%w: %v", ErrDemo, err)
		}
		dst := filepath.Join(dir, filepath.FromSlash(path))
		if st, err := os.Stat(dst); err == nil && st.Size() == info.Size() {
			return nil
		}
		f, err := model.Open(path)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrDemo, err)
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, info.Size()+1))
		if err != nil {
			return fmt.Errorf("%w: read %s: %v", ErrDemo, path, err)
		}
		if int64(len(b)) != info.Size() {
			return fmt.Errorf("%w: %s is %d bytes, not %d", ErrDemo, path, len(b), info.Size())
		}
		if err := writeFileAtomic(dst, b, 0o644); err != nil {
			return fmt.Errorf("%w: %v", ErrDemo, err)
		}
		return nil
	})
}

// DemoDir is where the demo model is unpacked in the data directory; it
// keeps its own heat histogram there, apart from the real model's.
func DemoDir(cfg Config) string { return filepath.Join(cfg.DataDir, "demo-k3-tiny") }

// UnpackDemo unpacks the built-in demo model (demo returns its files) into
// DemoDir and returns that directory.
func UnpackDemo(cfg Config, demo func() (fs.FS, error)) (string, error) {
	model, err := demo()
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrDemo, err)
	}
	dir := DemoDir(cfg)
	return dir, InstallDemo(model, dir)
}
