package downloader

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/deltafin/deltafin/checkpoint/safetensors"
)

// ErrDamaged: bytes on disk that came from the network do not parse even
// after fetching them again; `deltafin setup --repair` re-verifies the
// mirror.
var ErrDamaged = errors.New("downloader: damaged mirror")

// headerFailed reports whether err is a parse or layout error of a shard
// header: bytes that may have been damaged in transit or on disk.
func headerFailed(err error) bool {
	return errors.Is(err, safetensors.ErrFormat) || errors.Is(err, ErrLayout)
}

// healHeader is planShard's answer to a header that does not parse or
// whose layout is wrong: unless the whole file matched the hub's digest
// (then the hub's file itself is bad and err stands), the header's bytes
// are marked missing and fetched again, once. A second failure names the
// file and says how to repair.
func (m *Mirror) healHeader(ctx context.Context, f *File, err error) error {
	fs, ferr := m.file(f.Path)
	if ferr != nil {
		return ferr
	}
	fs.mu.Lock()
	verified := fs.pres.Verified != ""
	fs.mu.Unlock()
	if verified {
		return err
	}
	if m.opts.ReadOnly {
		return fmt.Errorf("%w: %s: %w; run `deltafin setup --repair`", ErrDamaged, f.Path, err)
	}
	if err := m.dropHeader(fs); err != nil {
		return err
	}
	err2 := m.readShardHeader(ctx, f)
	if err2 == nil || !headerFailed(err2) {
		return err2
	}
	return fmt.Errorf("%w: %s: its safetensors header, fetched twice from the hub, is unusable (%w); run `deltafin setup --repair` to re-verify the install (if it persists, the hub's copy of the file is broken)", ErrDamaged, f.Path, err2)
}

// dropHeader marks the shard's header bytes (the length prefix and the
// header it announces, as far as the prefix on disk is sane) missing and
// the file unverified, on disk before any refetch.
func (m *Mirror) dropHeader(fs *fileState) error {
	end := int64(8)
	if b, err := m.presentPrefix(fs); err == nil {
		if n, err := safetensors.HeaderLength(b, fs.entry.Size); err == nil {
			end = 8 + int64(n)
		}
	}
	return m.drop(fs, Range{0, min(end, fs.entry.Size)})
}

// presentPrefix returns the 8-byte length prefix if it is on disk.
func (m *Mirror) presentPrefix(fs *fileState) ([]byte, error) {
	fs.mu.Lock()
	ok := fs.pres.Ranges.covers(Range{0, 8})
	fs.mu.Unlock()
	if !ok || fs.entry.Size < 8 {
		return nil, errors.New("no prefix")
	}
	f, err := os.Open(fs.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, 8)
	_, err = f.ReadAt(b, 0)
	return b, err
}

// drop marks r of the file missing and the file unverified.
func (m *Mirror) drop(fs *fileState, r Range) error {
	fs.mu.Lock()
	fs.pres.Ranges = fs.pres.Ranges.remove(r)
	fs.pres.XetVerified = fs.pres.XetVerified.remove(r)
	fs.pres.Verified = ""
	fs.mu.Unlock()
	return fs.persist()
}

// Repair prepares a re-verification of everything present: files lose
// their verified marks (whole-file and Xet) (the next Fetch hashes them again and refetches
// any that fail), and every shard's header is marked missing, so that the
// next Plan fetches it again. Run Plan and Fetch after it.
func (m *Mirror) Repair(ctx context.Context) error {
	if m.opts.ReadOnly {
		return fmt.Errorf("%w: Repair", ErrReadOnly)
	}
	m.mu.Lock()
	names := make([]string, 0, len(m.entries))
	for name := range m.entries {
		names = append(names, name)
	}
	m.mu.Unlock()
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		fs, err := m.file(name)
		if err != nil {
			return err
		}
		fs.mu.Lock()
		complete := fs.pres.Ranges.covers(Range{0, fs.entry.Size})
		fs.pres.Verified = ""
		fs.pres.XetHash, fs.pres.XetVerified = "", nil
		fs.mu.Unlock()
		if complete || !isShard(name) {
			if err := fs.persist(); err != nil {
				return err
			}
			continue
		}
		if err := m.dropHeader(fs); err != nil {
			return err
		}
	}
	return nil
}
