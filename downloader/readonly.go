package downloader

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ErrReadOnly: a read-only mirror (Options.ReadOnly) was asked to write.
var ErrReadOnly = errors.New("downloader: the mirror is open read-only")

// openReadOnly is Open for Options.ReadOnly: nothing is created or opened
// for writing. An existing lock file is held shared, so a dry run waits for
// no reader but refuses while a download holds the mirror.
func openReadOnly(m *Mirror) (*Mirror, error) {
	path := filepath.Join(m.opts.Dir, metaDir, "lock")
	f, err := os.Open(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("downloader: lock %s: %w", path, err)
	default:
		if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				return nil, fmt.Errorf("%w: another deltafin process (the app or a setup) is writing %s; quit it or wait for it to finish", ErrBusy, m.opts.Dir)
			}
			return nil, fmt.Errorf("downloader: lock %s: %w", path, err)
		}
		m.lock = f
	}
	if err := m.loadManifest(); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// readOnlyAt is ReadAt of a read-only mirror (and how Xet verification
// reads a window): present bytes come from the file, missing ones straight
// from the hub into p, and nothing is written.
func (m *Mirror) readOnlyAt(ctx context.Context, fs *fileState, p []byte, off int64) error {
	r := Range{off, off + int64(len(p))}
	if r.Start < 0 || r.End > fs.entry.Size {
		return fmt.Errorf("%w: %s: range %v is outside the %d-byte file", ErrProtocol, fs.entry.Path, r, fs.entry.Size)
	}
	fs.mu.Lock()
	miss := fs.pres.Ranges.missing(r)
	fs.mu.Unlock()
	if len(miss) < 1 || miss[0] != r {
		f, err := os.Open(fs.path)
		if err != nil {
			return diskError(err, fs.path)
		}
		_, err = f.ReadAt(p, off)
		f.Close()
		if err != nil {
			return fmt.Errorf("downloader: read %s at %d: %w", fs.entry.Path, off, err)
		}
	}
	for _, mr := range miss {
		if err := m.fetchInto(ctx, fs, p[mr.Start-off:mr.End-off], mr.Start); err != nil {
			return err
		}
	}
	return nil
}

// fetchInto fills p with the file's bytes at off from the hub, retrying
// as a transfer does, without touching the disk.
func (m *Mirror) fetchInto(ctx context.Context, fs *fileState, p []byte, off int64) error {
	rt := retrier{m: m, what: fs.entry.Path + " bytes " + Range{off, off + int64(len(p))}.String()}
	for done := 0; done < len(p); {
		body, err := m.hub.openRange(ctx, fs.entry.Path, fs.entry.Size, off+int64(done), off+int64(len(p)))
		if err == nil {
			var n int
			for err == nil && done < len(p) {
				n, err = body.Read(p[done:])
				done += n
				if n > 0 {
					rt.progressed()
				}
			}
			body.Close()
			if done == len(p) {
				return nil
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if isPermanent(err) {
			return err
		}
		if err := rt.wait(ctx, err); err != nil {
			return err
		}
	}
	return nil
}
