package downloader

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// presenceVersion is the on-disk format of a presence map.
const presenceVersion = 1

// presence is the persisted record of which byte ranges of one mirrored file
// are on disk. A range is added only after its bytes were written and the
// file fsynced, and the record is replaced atomically, so after a crash the
// map may miss bytes that are there but never claims bytes that are not.
type presence struct {
	Version int      `json:"version"`
	Size    int64    `json:"size"`
	Ranges  rangeSet `json:"ranges"`
	// Verified is the digest the complete file was checked against, empty
	// until then.
	Verified string `json:"verified,omitempty"`
}

// loadPresence reads the map at path. A missing file is an empty map; a map
// for another size or a damaged one is discarded (the bytes are fetched
// again), because trusting it could hand the engine bytes that were never
// written.
func loadPresence(path string, size int64) (presence, error) {
	p := presence{Version: presenceVersion, Size: size}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return p, nil
	}
	if err != nil {
		return p, fmt.Errorf("downloader: read presence map: %w", err)
	}
	var got presence
	if json.Unmarshal(b, &got) != nil || got.Version != presenceVersion || got.Size != size || !got.Ranges.valid(size) {
		return p, nil
	}
	return got, nil
}

// save writes the map atomically: a temporary file in the same directory,
// fsynced, renamed over the old map, then the directory fsynced.
func (p presence) save(path string) error {
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("downloader: encode presence map: %w", err)
	}
	return writeFileAtomic(path, b)
}

// writeFileAtomic replaces path with data so that a crash leaves either the
// old or the new content, never a mix.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("downloader: write %s: %w", path, err)
	}
	tmp := f.Name()
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("downloader: write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("downloader: write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("downloader: write %s: %w", path, err)
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("downloader: sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("downloader: sync %s: %w", dir, err)
	}
	return nil
}
