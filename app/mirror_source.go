package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

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

// MirrorSource opens the engine's checkpoint files through the mirror m
// (Mirror.OpenSource): bytes that are present are read with pread, missing
// ones (stream mode's experts) are fetched from the hub into the mirror
// first (Ensure, before the expert store's own chunked direct reads, the
// path bench slice measures). Files outside the mirror are opened as plain
// files.
func MirrorSource(m *downloader.Mirror) ckpt.OpenSource { return m.OpenSource() }

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
