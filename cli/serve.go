package cli

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"

	"github.com/deltafin/deltafin/app"
)

// Serve is `deltafin serve`: the OpenAI-compatible API without the menu bar.
func Serve(ctx context.Context, c *Call) error {
	cfg := &c.Config
	fs := c.flags("")
	addModelFlags(fs, cfg)
	sc := &cfg.Server
	fs.StringVar(&sc.Host, "host", sc.Host, "address to listen on; anything but loopback exposes the model (set --api-key)")
	fs.IntVar(&sc.Port, "port", sc.Port, "port to listen on")
	fs.StringVar(&sc.ModelDir, "model", sc.ModelDir, "model directory to serve (config.json, safetensors shards, tiktoken.model); default: the model deltafin setup installed")
	fs.IntVar(&sc.MaxTokens, "max-tokens", sc.MaxTokens, "hard cap on generated tokens per request, 0 for none (also DELTAFIN_SERVER_MAX_TOKENS)")
	fs.IntVar(&sc.Queue, "queue", sc.Queue, "requests that may wait while one generates; beyond it they get 429")
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
	log := slog.New(slog.NewTextHandler(c.Stderr, nil))
	return serve(ctx, *cfg, log, nil)
}

// serve serves cfg.Server.ModelDir, or without one the installed model
// (deltafin setup; in a stream install its experts arrive on demand), until
// ctx ends; ready, if not nil, receives the base URL once the server
// listens.
func serve(ctx context.Context, cfg app.Config, log *slog.Logger, ready func(baseURL string)) (err error) {
	sc := cfg.Server
	if err := sc.Validate(); err != nil {
		return err
	}
	if !app.IsLoopback(sc.Host) && sc.APIKey == "" {
		log.Warn("the server is reachable from the network without an API key; set --api-key (or DELTAFIN_API_KEY)", "host", sc.Host)
	}
	ref := app.ModelRef{Dir: sc.ModelDir, NeedTokenizer: true}
	if ref.Dir == "" {
		if ref.Mirror, err = app.OpenInstalled(ctx, cfg); err != nil {
			return err
		}
		defer func() { err = errors.Join(err, ref.Mirror.Close()) }()
		ref.Dir = ref.Mirror.Dir()
	}
	m, err := app.OpenModel(ctx, cfg, ref)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, m.Close()) }()
	s, err := app.NewServer(sc, m, log)
	if err != nil {
		return err
	}
	return s.ListenAndServe(ctx, func(a net.Addr) {
		url := "http://" + a.String()
		log.Info("serving", "model", s.ModelID(), "base_url", url+"/v1")
		if ready != nil {
			ready(url)
		}
	})
}
