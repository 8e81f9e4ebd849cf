package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/downloader"
)

// OpenMirror opens the configured model mirror for reading by the engine
// (MirrorSource): offline once setup has run with a pinned commit. The
// caller closes it; while open, setup and fetch-experts in another process
// are refused (downloader.ErrBusy).
func OpenMirror(ctx context.Context, cfg Config) (*downloader.Mirror, error) {
	return openMirror(ctx, cfg, downloader.Options{})
}

// The mirror's Sources are Ensurers: without Ensure the engine's direct
// reads of a stream install would read its holes.
var _ ckpt.Ensurer = presentSource{}

// MirrorSource opens the engine's checkpoint files through the mirror m:
// bytes that are present are read with pread, missing ones (stream mode's
// experts) are fetched from the hub into the mirror first (Ensure, before
// the engine's own direct reads). Files outside the mirror are opened as
// plain files.
func MirrorSource(m *downloader.Mirror) ckpt.OpenSource {
	return func(ctx context.Context, path string) (ckpt.Source, error) {
		rel, err := filepath.Rel(m.Dir(), path)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return ckpt.OpenFile(ctx, path)
		}
		src, err := m.Source(filepath.ToSlash(rel))
		if err != nil {
			return nil, err
		}
		return presentSource{src, m}, nil
	}
}

// presentSource is a mirrored file that also says which of its bytes are on
// disk (ckpt.Presence), for the web page's picture of the experts.
type presentSource struct {
	*downloader.Source
	m *downloader.Mirror
}

var _ ckpt.Presence = presentSource{}

func (s presentSource) Present(off, n int64) bool {
	got, err := s.m.Present(s.Name(), off, n)
	return err == nil && got == n
}

// OpenInstalled opens the mirror of the model `deltafin setup` installed, or
// says that none is (ErrNoModel) and how to install one.
func OpenInstalled(ctx context.Context, cfg Config) (*downloader.Mirror, error) {
	installed := cfg.ModelDir()
	if _, err := os.Stat(filepath.Join(installed, "config.json")); err != nil {
		return nil, fmt.Errorf("%w: no model is installed in %s; run deltafin setup, or pass --model DIR (a directory with config.json, the safetensors shards and tiktoken.model)", ErrNoModel, installed)
	}
	m, err := OpenMirror(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("app: open the installed model: %w", err)
	}
	return m, nil
}
