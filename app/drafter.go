package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/deltafin/deltafin/downloader"
	"github.com/deltafin/deltafin/engine"
	"github.com/deltafin/deltafin/internal/atomicfile"
	"github.com/deltafin/deltafin/kernels"
)

// The drafter (issue 32, docs/DRAFTER.md): a second hub repository,
// installed whole beside the model by `deltafin setup --drafter` or the
// menu, through the same resumable, verified downloader. run, serve and
// the app draft with it when it is installed (Config.Drafter "auto"); its
// guesses only save target passes, the tokens stay the target's.
const (
	DefaultDrafterRepo = "lightseekorg/kimi-k3-eagle3.1-mla"
	// DefaultDrafterRevision is a branch: the commit of the published
	// drafter could not be read here (no network to the hub), so setup
	// resolves it and records the commit it installed (drafter.json).
	DefaultDrafterRevision = "main"
)

// drafterRecord is DataDir/drafter.json, written once an install is
// complete and verified: what run, serve and the app open, offline.
type drafterRecord struct {
	Repo     string `json:"repo"`
	Revision string `json:"revision"` // the commit installed
	Dir      string `json:"dir"`
}

func (c Config) drafterRecordPath() string { return filepath.Join(c.DataDir, "drafter.json") }

// drafterHub is c with the drafter's repository as the one to mirror.
func (c Config) drafterHub() Config {
	c.Repo, c.Revision, c.mirrorsDrafter = c.DrafterRepo, c.DrafterRevision, true
	return c
}

// drafterDir is where a drafter repository at a commit is mirrored: beside
// the models, not among them, so that a model and a drafter never share a
// directory.
func (c Config) drafterDir() string {
	return filepath.Join(c.DataDir, "drafters", strings.ReplaceAll(c.Repo, "/", "--"), c.Revision)
}

// ErrDrafterUnverified: the drafter's files could not all be verified
// against the hub's digests.
var ErrDrafterUnverified = errors.New("the drafter's download could not be verified")

// InstallDrafter downloads the drafter repository whole (it is a few GB,
// and every token reads all of it), verifies it, and records it in
// drafter.json. It returns the directory. Progress goes to opts.Progress;
// an interrupted install continues where it stopped on the next call.
func InstallDrafter(ctx context.Context, cfg Config, opts downloader.Options) (string, error) {
	d := cfg.drafterHub()
	m, p, err := OpenPlan(ctx, d, opts)
	if err != nil {
		return "", err
	}
	defer m.Close()
	work := p.Work(downloader.Full)
	full, err := m.Totals(work)
	if err != nil {
		return "", err
	}
	if _, err := chooseMode(m, p, downloader.Full, KeptFree(cfg.Headroom(), full.Total)); err != nil {
		return "", err
	}
	if err := m.Fetch(ctx, p, work); err != nil {
		return "", err
	}
	cov, err := m.Coverage(work)
	if err != nil {
		return "", err
	}
	if !cov.AllVerified() && !cfg.AllowUnverified {
		return "", fmt.Errorf("%w (%s); run deltafin setup --drafter --repair, or pass --allow-unverified", ErrDrafterUnverified, cov)
	}
	rec, err := json.Marshal(drafterRecord{Repo: p.Repo, Revision: p.Revision, Dir: m.Dir()})
	if err != nil {
		return "", err
	}
	if err := atomicfile.WriteFile(cfg.drafterRecordPath(), append(rec, '\n'), 0o644); err != nil {
		return "", fmt.Errorf("record the drafter: %w", err)
	}
	return m.Dir(), nil
}

// InstalledDrafter is the directory of the drafter setup installed, or ""
// when none is.
func InstalledDrafter(cfg Config) (string, error) {
	b, err := os.ReadFile(cfg.drafterRecordPath())
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var rec drafterRecord
	if err := json.Unmarshal(b, &rec); err != nil || rec.Dir == "" {
		return "", fmt.Errorf("%s is damaged; run deltafin setup --drafter again", cfg.drafterRecordPath())
	}
	if _, err := os.Stat(filepath.Join(rec.Dir, "config.json")); err != nil {
		return "", fmt.Errorf("the drafter recorded in %s is gone (%s); run deltafin setup --drafter again", cfg.drafterRecordPath(), rec.Dir)
	}
	return rec.Dir, nil
}

// drafterToUse is the drafter directory Config.Drafter names: none for
// "off", the installed one (or none) for "auto", else the directory given.
func drafterToUse(cfg Config) (dir string, explicit bool, err error) {
	switch cfg.Drafter {
	case "off":
		return "", false, nil
	case "", "auto":
		dir, err := InstalledDrafter(cfg)
		return dir, false, err
	}
	return cfg.Drafter, true, nil
}

// withDrafter adds to d the drafter for the model in modelDir: with
// "auto", a drafter that does not fit the model (the demo, another model)
// or does not open is left out with a warning, since drafting only saves
// time; a directory given explicitly must open.
func withDrafter(ctx context.Context, cfg Config, d engine.Draft, modelDir string, be kernels.Backend, log *slog.Logger) (engine.Draft, error) {
	dir, explicit, err := drafterToUse(cfg)
	if err == nil && dir == "" {
		return d, nil
	}
	var with engine.Draft
	if err == nil {
		with, err = d.WithDrafter(ctx, dir, modelDir, be)
	}
	switch {
	case err == nil:
		log.Info("drafting with " + with.String())
		return with, nil
	case explicit || ctx.Err() != nil:
		return d, fmt.Errorf("open the drafter: %w", err)
	}
	log.Warn("drafting without the installed drafter: " + err.Error())
	return d, nil
}
