package directio

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"sync"
)

// File is a checkpoint Source over a local file read with direct I/O where
// the buffer, offset and length allow it (the expert store's reads always
// do), and through the page cache otherwise: what a drive's replica files
// are.
//
// Reads run concurrently; Close waits for the reads in flight and fails
// the later ones with fs.ErrClosed. A read through a bare descriptor that
// Close released under it could read whatever file took the descriptor's
// number next, so mu holds the descriptors for each read (os.File's own
// RawConn would, but it admits one read at a time, and a drive wants 8).
type File struct {
	mu            sync.RWMutex
	closed        bool
	direct, plain *os.File
	isDirect      bool
	size          int64
}

// OpenFile opens path as a File.
func OpenFile(path string) (*File, error) {
	plain, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := plain.Stat()
	if err != nil {
		plain.Close()
		return nil, err
	}
	d, isDirect, err := Open(path, Direct)
	if err != nil {
		plain.Close()
		return nil, err
	}
	return &File{direct: d, plain: plain, isDirect: isDirect, size: st.Size()}, nil
}

// ReadAt fills p from off; a short read is an error, and so is a read
// after Close (fs.ErrClosed).
func (f *File) ReadAt(ctx context.Context, p []byte, off int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		return fmt.Errorf("%s: %w", f.plain.Name(), fs.ErrClosed)
	}
	if off < 0 {
		return fmt.Errorf("%s: read at negative offset %d of a %d-byte file", f.plain.Name(), off, f.length())
	}
	fd := f.plain
	aligned := f.isDirect && off%Align == 0 && len(p)%Align == 0 && Addr(p)%Align == 0
	if aligned {
		fd = f.direct
	}
	got, err := ReadFull(int(fd.Fd()), p, off, aligned)
	if err != nil {
		return err
	}
	if got < int64(len(p)) {
		return fmt.Errorf("%s: %d bytes at %d, past the end of a %d-byte file", f.plain.Name(), len(p), off, f.length())
	}
	return nil
}

// length is the file's length now, for errors: a drive's file grows while
// it is copied to, so the length at open may be stale.
func (f *File) length() int64 {
	st, err := f.plain.Stat()
	if err != nil {
		return f.size
	}
	return st.Size()
}

// Size is the file's length at open.
func (f *File) Size() int64 { return f.size }

// Close closes both descriptors once the reads in flight have ended; later
// reads fail with fs.ErrClosed. A second Close is a no-op.
func (f *File) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil
	}
	f.closed = true
	err := f.direct.Close()
	if perr := f.plain.Close(); err == nil {
		err = perr
	}
	return err
}
