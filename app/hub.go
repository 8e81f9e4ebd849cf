package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/deltafin/deltafin/downloader"
	"github.com/deltafin/deltafin/internal/sysinfo"
)

// The model Deltafin installs unless --repo / --revision say otherwise.
const (
	DefaultRepo       = "moonshotai/Kimi-K3"
	DefaultRevision   = "c5d1dd4c428bd1ce8b88c5044f3b6ccde9e3b721"
	DefaultHFEndpoint = "https://huggingface.co"
)

// hubFromEnv fills the model-source fields as huggingface_hub reads its
// environment: HF_ENDPOINT, then HF_TOKEN, the legacy HUGGING_FACE_HUB_TOKEN,
// and the token file that `huggingface-cli login` writes.
func hubFromEnv(getenv Getenv, c *Config) {
	c.HFEndpoint = DefaultHFEndpoint
	if v := strings.TrimSpace(getenv("HF_ENDPOINT")); v != "" {
		c.HFEndpoint = strings.TrimRight(v, "/")
	}
	c.Repo, c.Revision, c.Jobs = DefaultRepo, DefaultRevision, 8
	c.HFToken = hfToken(getenv)
}

func hfToken(getenv Getenv) string {
	for _, k := range []string{"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"} {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			return v
		}
	}
	path := getenv("HF_TOKEN_PATH")
	if path == "" {
		home := getenv("HF_HOME")
		if home == "" {
			cache := getenv("XDG_CACHE_HOME")
			if cache == "" {
				if getenv("HOME") == "" {
					return ""
				}
				cache = filepath.Join(getenv("HOME"), ".cache")
			}
			home = filepath.Join(cache, "huggingface")
		}
		path = filepath.Join(home, "token")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "" // no login: public repositories still work
	}
	return strings.TrimSpace(string(b))
}

// ModelDir is the local mirror of the configured repository and revision:
// the directory the engine opens. Revision must be a commit (setup resolves
// a branch or tag to one).
func (c Config) ModelDir() string {
	return filepath.Join(c.DataDir, "models", strings.ReplaceAll(c.Repo, "/", "--"), c.Revision)
}

func (c Config) validateHub() error {
	if owner, name, ok := strings.Cut(c.Repo, "/"); !ok || owner == "" || name == "" || strings.ContainsAny(name, "/\\") || strings.Contains(c.Repo, "..") {
		return fmt.Errorf("app: --repo %q is not owner/name", c.Repo)
	}
	if c.Revision == "" || strings.ContainsAny(c.Revision, "/\\") || c.Revision == "." || c.Revision == ".." {
		return fmt.Errorf("app: --revision %q is not a branch, tag or commit", c.Revision)
	}
	if c.Jobs < 1 || c.Jobs > 64 {
		return fmt.Errorf("app: --jobs %d is outside 1..64", c.Jobs)
	}
	if !strings.HasPrefix(c.HFEndpoint, "http://") && !strings.HasPrefix(c.HFEndpoint, "https://") {
		return fmt.Errorf("app: HF_ENDPOINT %q is not an http(s) URL", c.HFEndpoint)
	}
	return nil
}

// openMirror opens the configured mirror; progress receives its events. A
// branch or tag is resolved to its commit first (that needs the network).
// opts carries the transfer settings (ChunkSize, Progress, WaitOnDiskFull);
// the source, directory and jobs come from cfg.
func openMirror(ctx context.Context, cfg Config, opts downloader.Options) (*downloader.Mirror, error) {
	if err := cfg.validateHub(); err != nil {
		return nil, err
	}
	hub := downloader.HubOptions{Endpoint: cfg.HFEndpoint, Repo: cfg.Repo, Revision: cfg.Revision, Token: cfg.HFToken}
	rev, err := downloader.ResolveRevision(ctx, hub)
	if err != nil {
		return nil, unreachable(cfg, err)
	}
	cfg.Revision, hub.Revision = rev, rev
	opts.HubOptions, opts.Dir, opts.Jobs = hub, cfg.ModelDir(), cfg.Jobs
	if cfg.mirrorsDrafter {
		opts.Dir = cfg.drafterDir()
	}
	opts.AllowUnverified = cfg.AllowUnverified
	if opts.Disagreement == nil {
		// No command's log reaches here (setup, fetch-experts): the
		// process's default, which the console shows.
		opts.Disagreement = logDisagreement(slog.Default())
	}
	return downloader.Open(opts)
}

// OpenPlan opens the mirror and lists what the install needs; the caller
// closes the mirror (it is closed here when planning fails).
func OpenPlan(ctx context.Context, cfg Config, opts downloader.Options) (*downloader.Mirror, *downloader.Plan, error) {
	m, err := openMirror(ctx, cfg, opts)
	if err != nil {
		return nil, nil, err
	}
	p, err := m.Plan(ctx)
	if err != nil {
		m.Close()
		return nil, nil, unreachable(cfg, err)
	}
	return m, p, nil
}

// KeptFree is the free space kept after installing a model of full size
// bytes: h, or downloader.HeadroomFor the model when h is not set.
func KeptFree(h, full int64) int64 {
	if h <= 0 {
		return downloader.HeadroomFor(full)
	}
	return h
}

// Headroom is the free space every download leaves, in bytes: KeepFreeGB,
// or 0 when it is not set (KeptFree scales it to the model).
func (c Config) Headroom() int64 { return max(int64(c.KeepFreeGB*1e9), 0) }

// chooseMode picks the install mode for the menu's download as setup does:
// mode (Auto chooses by free disk) against the plan's stream and full totals,
// keeping headroom free.
func chooseMode(m *downloader.Mirror, p *downloader.Plan, mode downloader.Mode, headroom int64) (downloader.Mode, error) {
	stream, err := m.Totals(p.Work(downloader.Stream))
	if err != nil {
		return "", err
	}
	full, err := m.Totals(p.Work(downloader.Full))
	if err != nil {
		return "", err
	}
	free, err := sysinfo.FreeDisk(m.Dir())
	if err != nil {
		return "", fmt.Errorf("app: %w", err)
	}
	return downloader.Choose(mode, stream, full, int64(free), headroom)
}

// ErrUnreachable: the hub could not be reached at all (no network, a wrong
// HF_ENDPOINT, DNS), as opposed to an answer that refused.
var ErrUnreachable = errors.New("app: cannot reach the hub")

// unreachable says what to do when err is a failure to reach the hub.
func unreachable(cfg Config, err error) error {
	var op *net.OpError
	var dns *net.DNSError
	if errors.As(err, &dns) || (errors.As(err, &op) && op.Op == "dial") {
		return fmt.Errorf("%w at %s (set HF_ENDPOINT or check the network): %w", ErrUnreachable, cfg.HFEndpoint, err)
	}
	return err
}
