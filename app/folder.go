package app

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/downloader"
)

// ErrUnverified: the install holds bytes that could not be verified
// against the hub, and Config.AllowUnverified does not allow them.
var ErrUnverified = downloader.ErrUnverified

// openFolder picks how the engine reads ref's shards. A stream install's
// shards are sparse, their missing experts holes that read as zeros, so
// no folder a mirror wrote is read as plain files:
//   - ref.Mirror: through it (missing bytes fetched and checked);
//   - a --model folder with presence maps whose manifest names its
//     repository: opened as a mirror of it (with this Config's hub), so
//     missing bytes are fetched into it; the mirror is returned to close;
//   - one without a usable manifest, or held by another process: its
//     files, each read checked against the presence maps (a missing range
//     is refused, naming the file and the range).
//
// Plain files (no presence maps) are opened as such (nil). Either way the
// install's bytes must be verified, unless cfg.AllowUnverified. What it
// says goes to ref.Log (the command's log, with its log file).
func openFolder(ctx context.Context, cfg Config, ref ModelRef) (ckpt.OpenSource, *downloader.Mirror, error) {
	log := ref.Log
	if ref.Mirror != nil {
		u, err := ref.Mirror.Unverified()
		if err != nil {
			return nil, nil, err
		}
		if err := allowed(cfg, u, log); err != nil {
			return nil, nil, err
		}
		return MirrorSource(ref.Mirror), nil, nil
	}
	if !downloader.IsMirrorFolder(ref.Dir) {
		return nil, nil, nil
	}
	f, err := downloader.OpenFolder(ref.Dir)
	if err != nil {
		return nil, nil, err
	}
	if f.Repo != "" && f.Revision != "" {
		m, err := downloader.Open(downloader.Options{
			HubOptions: downloader.HubOptions{Endpoint: cfg.HFEndpoint, Repo: f.Repo, Revision: f.Revision, Token: cfg.HFToken},
			Dir:        ref.Dir, Jobs: max(cfg.Jobs, 1), AllowUnverified: cfg.AllowUnverified, Disagreement: logDisagreement(log),
		})
		switch {
		case err == nil:
			u, err := m.Unverified()
			if err == nil {
				err = allowed(cfg, u, log)
			}
			if err != nil {
				m.Close()
				return nil, nil, err
			}
			return MirrorSource(m), m, nil
		case !errors.Is(err, downloader.ErrBusy):
			return nil, nil, err
		}
		log.Info("another process holds the mirror; its folder is read as it is on disk, missing bytes refused", "dir", ref.Dir)
	}
	u, err := f.Unverified()
	if err != nil {
		return nil, nil, err
	}
	if err := allowed(cfg, u, log); err != nil {
		return nil, nil, err
	}
	return func(ctx context.Context, path string) (ckpt.Source, error) {
		src, err := ckpt.OpenFile(ctx, path)
		if err != nil {
			return nil, err
		}
		return checkedFile{src, f, relName(ref.Dir, path)}, nil
	}, nil, nil
}

// allowed refuses unverified bytes unless the Config allows them (and says
// so to log).
func allowed(cfg Config, u downloader.Unverified, log *slog.Logger) error {
	err := u.Err()
	if err == nil {
		return nil
	}
	if cfg.AllowUnverified {
		log.Warn("using bytes that could not be verified (--allow-unverified)", "detail", err.Error())
		return nil
	}
	return err
}

// checkedFile is a file of a folder a mirror wrote, read only where its
// presence map says the bytes are on disk: Ensure refuses a missing range
// (the engine calls it before its direct reads), ReadAt checks first.
type checkedFile struct {
	ckpt.Source
	f    *downloader.Folder
	name string
}

var _ ckpt.Ensurer = checkedFile{}

// Ensure checks ctx first, as every Source does (sourcetest's contract): a
// cancelled turn must not read on.
func (c checkedFile) Ensure(ctx context.Context, off, n int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return c.f.Check(c.name, off, n)
}

func (c checkedFile) ReadAt(ctx context.Context, p []byte, off int64) error {
	if err := c.f.Check(c.name, off, int64(len(p))); err != nil {
		return err
	}
	return c.Source.ReadAt(ctx, p, off)
}

// logDisagreement logs a verifier disagreement's evidence to log (the
// install goes on; the bytes stay unverified).
func logDisagreement(log *slog.Logger) func(downloader.Disagreement) {
	return func(d downloader.Disagreement) {
		log.Warn(d.String(), "file", d.File, "window", d.Window.String(), "sha256", d.SHA256, "xet_hash", d.XetHash)
	}
}

// Close closes the file, as the engine closes the Sources it opened.
func (c checkedFile) Close() error {
	if cl, ok := c.Source.(io.Closer); ok {
		return cl.Close()
	}
	return nil
}

// relName is path's name inside dir, as the presence maps name it.
func relName(dir, path string) string {
	rel, err := filepath.Rel(dir, path)
	if err != nil {
		return path
	}
	return filepath.ToSlash(rel)
}
