package app

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/deltafin/deltafin/downloader"
	"github.com/deltafin/deltafin/engine"
)

// MirrorSource opens the engine's checkpoint files through the mirror m:
// bytes that are present are read with pread, missing ones (stream mode's
// experts) are fetched from the hub into the mirror first. Files outside
// the mirror are opened as plain files.
func MirrorSource(m *downloader.Mirror) engine.OpenSource {
	return func(ctx context.Context, path string) (engine.Source, error) {
		rel, err := filepath.Rel(m.Dir(), path)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return engine.OpenFile(ctx, path)
		}
		return m.Source(filepath.ToSlash(rel))
	}
}
