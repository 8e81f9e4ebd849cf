package downloader

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// A model folder that a mirror wrote (the installed mirror, another data
// directory's, or a copy of one) keeps its shards sparse: the bytes of a
// stream install's missing experts are holes that read as zeros. So every
// reader of such a folder consults its presence maps. Folder is what the
// maps and the manifest say without a Mirror: the app opens a folder that
// names its repository and revision as a Mirror (missing bytes are fetched
// on demand), and one it cannot open so (no manifest, or another process
// holds it) through Folder.Check, which refuses a missing range by name.

// ErrMissing: bytes a reader asked for are not on disk, and there is no
// mirror to fetch them through.
var ErrMissing = errors.New("downloader: bytes not on disk")

// Folder is a model folder written by a mirror, read from its .deltafin/.
type Folder struct {
	Dir string
	// Repo and Revision are the manifest's, empty when it has none (or a
	// damaged one).
	Repo, Revision string

	entries map[string]Entry
	mu      sync.Mutex
	maps    map[string]presence
}

// IsMirrorFolder reports whether dir was written by a mirror: it has
// presence maps (so its shards may be sparse).
func IsMirrorFolder(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, metaDir, "presence"))
	return err == nil && st.IsDir()
}

// OpenFolder reads dir's manifest, if it has a usable one; the presence
// maps are read as Check needs them.
func OpenFolder(dir string) (*Folder, error) {
	f := &Folder{Dir: dir, entries: map[string]Entry{}, maps: map[string]presence{}}
	b, err := os.ReadFile(filepath.Join(dir, metaDir, "manifest.json"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return f, nil
	case err != nil:
		return nil, fmt.Errorf("downloader: read %s's manifest: %w", dir, err)
	}
	var man manifest
	if json.Unmarshal(b, &man) != nil || man.Version != 1 {
		return f, nil // damaged: no repository to fetch from
	}
	for _, e := range man.Files {
		if !safePath(e.Path) || e.Size < 0 {
			return f, nil
		}
		f.entries[e.Path] = e
	}
	f.Repo, f.Revision = man.Repo, man.Revision
	return f, nil
}

// presence returns file's map as the folder holds it now: a file without
// one, or whose size is not the map's, holds nothing the map vouches for.
func (f *Folder) presence(file string) (presence, int64, error) {
	path := filepath.Join(f.Dir, filepath.FromSlash(file))
	st, err := os.Stat(path)
	if err != nil {
		return presence{}, 0, fmt.Errorf("downloader: %w", err)
	}
	size := st.Size()
	if e, ok := f.entries[file]; ok && e.Size != size {
		return presence{Version: presenceVersion, Size: e.Size}, e.Size, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if p, ok := f.maps[file]; ok && p.Size == size {
		return p, size, nil
	}
	p, err := loadPresence(filepath.Join(f.Dir, metaDir, "presence", filepath.FromSlash(file)+".json"), size)
	if err != nil {
		return p, size, err
	}
	f.maps[file] = p
	return p, size, nil
}

// Check returns nil when bytes [off, off+n) of file are on disk, else
// ErrMissing naming the file and the first missing range. A range missing
// from the map read before is looked up again (another process may have
// fetched it since).
func (f *Folder) Check(file string, off, n int64) error {
	r := Range{off, off + n}
	for again := range 2 {
		if again == 1 {
			f.mu.Lock()
			delete(f.maps, file)
			f.mu.Unlock()
		}
		p, size, err := f.presence(file)
		if err != nil {
			return err
		}
		if r.Start < 0 || r.End > size {
			return fmt.Errorf("%w: %s: range %v is outside the %d-byte file", ErrProtocol, file, r, size)
		}
		miss := p.Ranges.missing(r)
		if len(miss) == 0 {
			return nil
		}
		if again == 1 {
			return fmt.Errorf("%w: %s bytes %v (of the range %v asked for) are not on disk: %s was written by a stream install, whose missing experts are holes; run with the installed model (no --model), or open the mirror this folder came from, so that they are fetched from the hub", ErrMissing, file, miss[0], r, f.Dir)
		}
	}
	return nil
}

// Unverified measures the bytes of the folder's files that are present
// and not verified (Coverage's sense): the first file holding any, and
// how many bytes in all.
func (f *Folder) Unverified() (Unverified, error) {
	var u Unverified
	root := filepath.Join(f.Dir, metaDir, "presence")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		name, ok := strings.CutSuffix(filepath.ToSlash(rel), ".json")
		if !ok || d.IsDir() {
			return nil
		}
		p, _, err := f.presence(name)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // a map of a file no longer there: nothing to read
		}
		if err != nil {
			return err
		}
		verified := p.XetVerified.total()
		if e, ok := f.entries[name]; p.Verified != "" && (!ok || p.Verified == digestOf(e)) {
			verified = p.Ranges.total()
		}
		u.add(name, p.Ranges.total()-verified)
		return nil
	})
	if err != nil {
		return u, fmt.Errorf("downloader: read %s's presence maps: %w", f.Dir, err)
	}
	return u, nil
}
