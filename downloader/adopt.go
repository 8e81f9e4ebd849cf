package downloader

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// AdoptComplete records every file already in opts.Dir (outside the
// mirror's own .deltafin) as a complete file of opts.Repo at opts.Revision:
// it writes the manifest and, for each file, a presence map holding all of
// it, so that Open finds an installed full mirror, laid out as setup lays
// one out, without a hub. The bytes are not hashed: the install reads as
// unverified (Unverified, Options.AllowUnverified) until a setup checks
// them. It is how `deltafin bench slice --mirror` installs its synthetic
// checkpoint, to measure the engine over a mirror's Sources.
func AdoptComplete(opts Options) error {
	if opts.Dir == "" || opts.Repo == "" || opts.Revision == "" {
		return fmt.Errorf("downloader: adopt: a directory, repository and revision are needed")
	}
	var entries []Entry
	err := filepath.WalkDir(opts.Dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(opts.Dir, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == metaDir {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !safePath(rel) || strings.HasPrefix(filepath.Base(rel), ".") {
			return nil
		}
		st, err := d.Info()
		if err != nil {
			return err
		}
		entries = append(entries, Entry{Path: rel, Size: st.Size()})
		return nil
	})
	if err != nil {
		return fmt.Errorf("downloader: adopt %s: %w", opts.Dir, err)
	}
	slices.SortFunc(entries, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	m, err := Open(opts)
	if err != nil {
		return err
	}
	defer m.Close()
	for _, e := range entries {
		p := presence{Version: presenceVersion, Size: e.Size}
		if e.Size > 0 {
			p.Ranges = rangeSet{{0, e.Size}}
		}
		path := filepath.Join(opts.Dir, metaDir, "presence", filepath.FromSlash(e.Path)+".json")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return diskError(err, path)
		}
		if err := p.save(path); err != nil {
			return err
		}
	}
	if err := m.saveManifest(entries); err != nil {
		return err
	}
	return nil
}
