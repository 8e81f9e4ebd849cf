package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strconv"
	"strings"

	"github.com/deltafin/deltafin/app"
	"github.com/deltafin/deltafin/server"
	"github.com/deltafin/deltafin/web"
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
	sc, given := cfg.Server, cfg
	if err := sc.Validate(); err != nil {
		return err
	}
	if strings.HasPrefix(cfg.Draft, "oracle:") {
		return fmt.Errorf("--draft %s needs each answer beforehand: it is for run and bench slice, not serve", cfg.Draft)
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
	// The port before the weights: a taken one is said at once.
	ln, err := server.Listen(ctx, app.ServerOptions(sc))
	if err != nil {
		return fmt.Errorf("%w; use --port to pick another", err)
	}
	defer ln.Close() // Serve closes it too; this is for the returns before
	ref := app.ModelRef{Dir: sc.ModelDir, NeedTokenizer: true, Log: log}
	served := sc.ModelDir
	if ref.Dir == "" {
		switch ref.Mirror, err = app.OpenInstalled(ctx, cfg); {
		case errors.Is(err, app.ErrNoModel) && demo != nil:
			if ref.Dir, err = app.UnpackDemo(cfg, demo); err != nil {
				return err
			}
			cfg.DataDir = ref.Dir // the demo keeps its own heat histogram
			sc.Demo, served = true, "the demo model (nothing is installed)"
			log.Warn("nothing is installed: serving the demo model (random weights, gibberish answers); run deltafin setup for Kimi K3")
		case err != nil:
			return err
		default:
			defer func() { err = errors.Join(err, ref.Mirror.Close()) }()
			ref.Dir = ref.Mirror.Dir()
			served = "installed: " + ref.Dir
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
	url := "http://" + app.PasteableAddr(ln.Addr())
	given.Server = sc
	s, err := app.NewServer(sc, m, app.Jobs{Store: jobs, Flags: servingFlags(given, served, m, url)}, log)
	if err != nil {
		return err
	}
	log.Info("serving", "model", s.ModelID(), "base_url", url+"/v1")
	if err := lock.SetURL(url); err != nil {
		log.Warn("instance lock", "err", err)
	}
	if ready != nil {
		ready(url)
	}
	return s.Serve(ctx, ln)
}

// servingFlags are the settings serve runs with, as its /settings lists
// them: cfg as given (its data directory, not the demo's own), the model
// served and the address bound. The API key itself is never shown.
func servingFlags(cfg app.Config, served string, m *app.Model, url string) []web.Flag {
	sc := cfg.Server
	or := func(v, none string) string {
		if v == "" || v == "0" {
			return none
		}
		return v
	}
	key := "not set"
	if sc.APIKey != "" {
		key = "set (required as Authorization: Bearer)"
	}
	ram := "what is available at start, less a headroom"
	if cfg.RAMGB > 0 {
		ram = strconv.FormatFloat(cfg.RAMGB, 'g', -1, 64) + " GB"
	}
	id := app.ServerOptions(sc).ModelID
	if id == "" {
		id = m.Info().ID
	}
	plan, _, _ := strings.Cut(strings.TrimPrefix(m.Plan().String(), "RAM plan: "), "\n")
	return []web.Flag{
		{Name: "--host, --port", Value: strings.TrimPrefix(url, "http://") + " (--port " + strconv.Itoa(sc.Port) + ")"},
		{Name: "--data-dir", Value: cfg.DataDir},
		{Name: "--model", Value: served + " (served as " + id + ")"},
		{Name: "--api-key", Value: key},
		{Name: "--cors-origin", Value: or(strings.Join(sc.CORSOrigins, ", "), "none (CORS off)")},
		{Name: "--max-tokens", Value: or(strconv.Itoa(sc.MaxTokens), "none")},
		{Name: "--queue", Value: strconv.Itoa(sc.Queue)},
		{Name: "--memo-entries", Value: or(strconv.Itoa(sc.MemoEntries), "0 (memo off)")},
		{Name: "--ram-gb", Value: ram + "; " + plan},
		{Name: "--spine", Value: cfg.Spine},
		{Name: "--trace", Value: or(cfg.Trace, "off")},
		{Name: "--allow-unverified", Value: strconv.FormatBool(cfg.AllowUnverified)},
		{Name: "kernels (DELTAFIN_KERNELS)", Value: m.Info().Backend + " (asked: " + cfg.Kernels + ")"},
	}
}
