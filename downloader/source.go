package downloader

import (
	"context"
	"fmt"
)

// Source is one mirrored file seen as the engine's byte source (ckpt.Source
// with its Ensurer capability): Ensure makes bytes present, fetching missing
// ones from the hub into the mirror, after which a pread of the mirrored file
// returns them (the engine's direct reads of experts); ReadAt does the same
// and then reads them. In a full install nothing is ever missing and either
// is a presence check (and a pread).
type Source struct {
	m    *Mirror
	file string
	size int64
}

// Source returns the byte source of a mirrored file (a shard's name, as in
// the repository).
func (m *Mirror) Source(file string) (*Source, error) {
	fs, err := m.file(file)
	if err != nil {
		return nil, err
	}
	return &Source{m: m, file: file, size: fs.entry.Size}, nil
}

// ReadAt fills p with the bytes at off, completely or with an error.
func (s *Source) ReadAt(ctx context.Context, p []byte, off int64) error {
	if off < 0 || off+int64(len(p)) > s.size {
		return fmt.Errorf("%w: %s: read [%d, %d) outside the %d-byte file", ErrProtocol, s.file, off, off+int64(len(p)), s.size)
	}
	if err := s.m.ensureChecked(ctx, s.file, Range{off, off + int64(len(p))}); err != nil {
		return err
	}
	return s.m.ReadAt(ctx, s.file, p, off)
}

// Ensure makes bytes [off, off+n) of the file present in the mirror
// (Mirror.Ensure): one HTTP range request per missing run, shared with
// concurrent callers, written and fsynced before it returns. In a file held
// in part the bytes are checked against its Xet hash first, with the few
// bytes at the edges of their Xet window fetched in the same request.
func (s *Source) Ensure(ctx context.Context, off, n int64) error {
	return s.m.ensureChecked(ctx, s.file, Range{off, off + n})
}

// Size returns the file's size.
func (s *Source) Size() int64 { return s.size }

// Name returns the file's name in the repository.
func (s *Source) Name() string { return s.file }
