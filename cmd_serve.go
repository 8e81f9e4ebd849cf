package main

import (
	"context"
	"log/slog"
	"os"
	"strings"

	"github.com/deltafin/deltafin/app"
)

func runServe(ctx context.Context, cfg app.Config, args []string) error {
	fs := newFlags("serve", "", &cfg)
	addStreamFlags(fs, &cfg)
	sc := &cfg.Server
	fs.StringVar(&sc.Host, "host", sc.Host, "address to listen on; anything but loopback exposes the model (set --api-key)")
	fs.IntVar(&sc.Port, "port", sc.Port, "port to listen on")
	fs.StringVar(&sc.ModelDir, "model", sc.ModelDir, "model directory to serve (config.json, safetensors shards, tiktoken.model); default: the model deltafin setup installed")
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
	if err := parse(fs, args, &cfg); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	return app.Serve(ctx, cfg, log, nil)
}
