package downloader

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	ckpt "github.com/deltafin/deltafin/checkpoint"
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

// Present reports whether bytes [off, off+n) are on disk, without reading
// or fetching (ckpt.Presence: the web page's picture of the experts).
func (s *Source) Present(off, n int64) bool {
	got, err := s.m.Present(s.file, off, n)
	return err == nil && got == n
}

// OpenSource opens the engine's checkpoint files through the mirror: a file
// inside its directory is the mirror's Source (present bytes read with
// pread, missing ones fetched first; Ensure before the expert store's own
// direct reads), a file outside it a plain file.
func (m *Mirror) OpenSource() ckpt.OpenSource {
	return func(ctx context.Context, path string) (ckpt.Source, error) {
		rel, err := filepath.Rel(m.Dir(), path)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return ckpt.OpenFile(ctx, path)
		}
		return m.Source(filepath.ToSlash(rel))
	}
}

// The mirror's Sources are Ensurers (without Ensure the expert store's
// direct reads of a stream install would read its holes) and know which
// bytes are present.
var (
	_ ckpt.Ensurer  = (*Source)(nil)
	_ ckpt.Presence = (*Source)(nil)
)

// Size returns the file's size.
func (s *Source) Size() int64 { return s.size }

// Name returns the file's name in the repository.
func (s *Source) Name() string { return s.file }
