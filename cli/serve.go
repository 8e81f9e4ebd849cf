package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"strconv"
	"strings"

	"github.com/deltafin/deltafin/app"
)

// Serve returns `deltafin serve`: the OpenAI-compatible API without the
// menu bar. With no --model and nothing installed it serves demo, the
// built-in demo model, and says so.
func Serve(demo func() (fs.FS, error)) func(ctx context.Context, c *Call) error {
	return func(ctx context.Context, c *Call) error {
		cfg := &c.Config
		fs := c.flags("")
		addModelFlags(fs, cfg)
		addrFlags(fs, cfg)
		sc := &cfg.Server
		fs.StringVar(&sc.ModelDir, "model", sc.ModelDir, "model directory to serve (config.json, safetensors shards, tiktoken.model); default: the model deltafin setup installed, else the demo model")
		fs.IntVar(&sc.MaxTokens, "max-tokens", sc.MaxTokens, "hard cap on generated tokens per request, 0 for none (also DELTAFIN_SERVER_MAX_TOKENS)")
		fs.IntVar(&sc.Queue, "queue", sc.Queue, "jobs that may wait (FIFO) while one generates; beyond it they get 429, 0 refuses at once")
		fs.IntVar(&sc.MemoEntries, "memo-entries", sc.MemoEntries, "answers remembered for identical requests, 0 to disable")
		fs.StringVar(&sc.APIKey, "api-key", sc.APIKey, "require Authorization: Bearer KEY (also DELTAFIN_API_KEY)")
		fs.Func("cors-origin", "allow browser requests from this origin (repeatable or comma-separated; CORS is off by default)", func(v string) error {
			for _, o := range strings.Split(v, ",") {
				if o = strings.TrimSpace(o); o != "" {
					sc.CORSOrigins = append(sc.CORSOrigins, o)
				}
			}
			return nil
		})
		if err := c.parse(fs, c.Args); err != nil {
			return err
		}
		logger := app.NewLogger(*cfg, c.Stderr)
		defer logger.Close()
		return serve(ctx, *cfg, demo, logger.Logger, nil)
	}
}

// serve serves cfg.Server.ModelDir, or without one the installed model
// (deltafin setup; in a stream install its experts arrive on demand), or
// with nothing installed the demo model, until ctx ends; ready, if not nil,
// receives the base URL once the server listens. Everything cheap is
// checked before a weight is read: the instance lock, the port, the RAM
// asked for and the tokenizer.
func serve(ctx context.Context, cfg app.Config, demo func() (fs.FS, error), log *slog.Logger, ready func(baseURL string)) (err error) {
	sc := cfg.Server
	if err := sc.Validate(); err != nil {
		return err
	}
	if err := app.CheckRAM(cfg); err != nil {
		return err
	}
	if !app.IsLoopback(sc.Host) && sc.APIKey == "" {
		log.Warn("the server is reachable from the network without an API key; set --api-key (or DELTAFIN_API_KEY)", "host", sc.Host)
	}
	lock, err := app.LockDataDir(cfg.DataDir)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, lock.Close()) }()
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", net.JoinHostPort(sc.Host, strconv.Itoa(sc.Port)))
	if err != nil {
		return fmt.Errorf("listen on %s:%d (use --port to pick another): %w", sc.Host, sc.Port, err)
	}
	defer ln.Close()
	ref := app.ModelRef{Dir: sc.ModelDir, NeedTokenizer: true, Log: log}
	if ref.Dir == "" {
		switch ref.Mirror, err = app.OpenInstalled(ctx, cfg); {
		case errors.Is(err, app.ErrNoModel) && demo != nil:
			if ref.Dir, err = app.UnpackDemo(cfg, demo); err != nil {
				return err
			}
			cfg.DataDir = ref.Dir // the demo keeps its own heat histogram
			sc.Demo = true
			log.Warn("nothing is installed: serving the demo model (random weights, gibberish answers); run deltafin setup for Kimi K3")
		case err != nil:
			return err
		default:
			defer func() { err = errors.Join(err, ref.Mirror.Close()) }()
			ref.Dir = ref.Mirror.Dir()
		}
	}
	m, err := app.OpenModel(ctx, cfg, ref)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, m.Close()) }()
	// Responses and queued jobs survive restarts in the data directory
	// (the demo's own, when serving it); Serve resumes them.
	jobs, err := app.OpenStore(cfg)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, jobs.Close()) }()
	s, err := app.NewServer(sc, m, app.Jobs{Store: jobs}, log)
	if err != nil {
		return err
	}
	url := "http://" + app.PasteableAddr(ln.Addr())
	log.Info("serving", "model", s.ModelID(), "base_url", url+"/v1")
	if err := lock.SetURL(url); err != nil {
		log.Warn("instance lock", "err", err)
	}
	if ready != nil {
		ready(url)
	}
	return s.Serve(ctx, ln)
}
