package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
)

// Source is the bytes of one checkpoint file: the one door through which the
// engine and the expert store reach them. Headers and the resident spine are read with ReadAt;
// the streamed parts (routed experts, spine layers past the pinned prefix)
// are read by the engine's own direct-I/O preads of the file at the same
// path, which bypass the page cache, after Ensure when the Source has it.
// So a plain file, or the downloader's mirror with its on-demand range
// fetches, can stand behind it. sourcetest.Run is the contract.
type Source interface {
	// ReadAt fills p from offset off, or fails: a short read, or one past
	// the end, is an error.
	ReadAt(ctx context.Context, p []byte, off int64) error
	// Size is the file's length in bytes.
	Size() int64
}

// Ensurer is the optional capability of a Source whose local file may lack
// some of its bytes (a stream install's sparse shard): Ensure makes bytes
// [off, off+n) present in the file, fetching them if need be, after which a
// pread of the file returns them. It returns at once when they are present
// already. A Source without it is a complete local file.
type Ensurer interface {
	Ensure(ctx context.Context, off, n int64) error
}

// Presence is the optional capability of a Source that can say, without
// reading, whether a byte range is on disk (a stream install's sparse
// shard). A Source without it is a complete local file.
type Presence interface {
	Present(off, n int64) bool
}

// OpenSource opens a checkpoint file (OpenFile, or the mirror's; the
// engine's Options.OpenSource).
type OpenSource func(ctx context.Context, path string) (Source, error)

// FileSource is a Source over a local file, read with pread.
type FileSource struct {
	f    *os.File
	size int64
}

// OpenFile opens path as a FileSource.
func OpenFile(_ context.Context, path string) (Source, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &FileSource{f: f, size: st.Size()}, nil
}

// ReadAt reads len(p) bytes at off. ctx is checked once: a local pread of a
// bounded range does not block for long.
func (s *FileSource) ReadAt(ctx context.Context, p []byte, off int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if off < 0 || off > s.size || int64(len(p)) > s.size-off {
		return fmt.Errorf("read [%d,%d) past the end of a %d-byte file", off, off+int64(len(p)), s.size)
	}
	n, err := s.f.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// Size returns the file length at open time.
func (s *FileSource) Size() int64 { return s.size }

// Close closes the file.
func (s *FileSource) Close() error { return s.f.Close() }

// readerAt adapts a Source to io.ReaderAt for the safetensors header parser.
type readerAt struct {
	ctx context.Context
	src Source
}

func (r readerAt) ReadAt(p []byte, off int64) (int, error) {
	if err := r.src.ReadAt(r.ctx, p, off); err != nil {
		return 0, err
	}
	return len(p), nil
}
