package main

import (
	"context"
	"embed"
	"io/fs"
	"log/slog"
	"os"

	"github.com/deltafin/deltafin/app"
)

// demoFiles is the built-in demo model: the k3-tiny checkpoint (random
// weights, the real K3 layout, about 6 MB), served when nothing is
// installed so the API and the whole pipeline work on a fresh machine.
//
//go:embed testdata/k3-tiny/config.json testdata/k3-tiny/generation_config.json
//go:embed testdata/k3-tiny/model-*.safetensors testdata/k3-tiny/model.safetensors.index.json
//go:embed testdata/k3-tiny/tiktoken.model testdata/k3-tiny/tokenizer_config.json
var demoFiles embed.FS

// demoModel is demoFiles with the model at its root.
func demoModel() (fs.FS, error) { return fs.Sub(demoFiles, "testdata/k3-tiny") }

func runApp(ctx context.Context, cfg app.Config, args []string) error {
	fs := newFlags("app", "", &cfg)
	fs.DurationVar(&cfg.NotifyAfter, "notify-after", cfg.NotifyAfter, "notify when an answer takes longer than this (0: never)")
	fs.DurationVar(&cfg.WarmIdleAfter, "warm-idle-after", cfg.WarmIdleAfter, "overnight warming starts after this long without input")
	if err := parse(fs, args, &cfg); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	demo, err := demoModel()
	if err != nil {
		return err
	}
	deps, err := app.MenuBarDeps(cfg, demo, log)
	if err != nil {
		return err
	}
	return app.RunMenuBar(ctx, cfg, deps, log)
}
