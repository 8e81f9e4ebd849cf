package experts

import (
	"context"
	"fmt"
	"os"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/internal/directio"
)

// A ShardFile is a shard opened for the streamed reads, the store's and the
// engine's spine loader's: positional reads on a descriptor that bypasses
// the page cache where the system allows (directio.Direct), after Ensure
// when the shard's Source may lack bytes (a stream install's sparse file).
type ShardFile struct {
	name   string
	f      *os.File
	fd     int
	direct bool
	ensure ckpt.Ensurer // the shard's Source, when bytes may be missing; else nil
}

// OpenShard opens the shard at path (name for errors) in mode; src is its
// Source (nil: a complete local file), kept when it is a ckpt.Ensurer. It
// returns the file's size.
func OpenShard(path, name string, mode directio.Mode, src ckpt.Source) (*ShardFile, int64, error) {
	f, direct, err := directio.Open(path, mode)
	if err != nil {
		return nil, 0, fmt.Errorf("experts: open shard %s: %w", name, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("experts: shard %s: %w", name, err)
	}
	ensure, _ := src.(ckpt.Ensurer)
	return &ShardFile{name: name, f: f, fd: int(f.Fd()), direct: direct, ensure: ensure}, st.Size(), nil
}

// Name is the shard's file name.
func (sf *ShardFile) Name() string { return sf.name }

// Direct reports whether reads bypass the page cache: buffers, offsets and
// lengths must then be aligned (directio.Align).
func (sf *ShardFile) Direct() bool { return sf.direct }

// Sparse reports whether the file may lack bytes that Ensure fetches.
func (sf *ShardFile) Sparse() bool { return sf.ensure != nil }

// Ensure makes bytes [off, off+n) present (the Source's Ensure); a complete
// file has them already.
func (sf *ShardFile) Ensure(ctx context.Context, off, n int64) error {
	if sf.ensure == nil {
		return nil
	}
	return sf.ensure.Ensure(ctx, off, n)
}

// Present says whether bytes [off, off+n) are on disk without reading: true
// unless the Source can tell them missing (ckpt.Presence).
func (sf *ShardFile) Present(off, n int64) bool {
	if p, ok := sf.ensure.(ckpt.Presence); ok {
		return p.Present(off, n)
	}
	return true
}

// ReadFull reads len(buf) bytes at off (directio.ReadFull); it returns the
// bytes read, short only at the end of the file.
func (sf *ShardFile) ReadFull(buf []byte, off int64) (int64, error) {
	return directio.ReadFull(sf.fd, buf, off, sf.direct)
}

// DropBehind asks the system to drop [off, off+n) from the page cache (a
// buffered descriptor's read-behind: streamed bytes must not evict the
// spine).
func (sf *ShardFile) DropBehind(off, n int64) { directio.DropRange(sf.f, off, n) }

// Close closes the file.
func (sf *ShardFile) Close() error { return sf.f.Close() }
