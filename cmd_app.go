package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/deltafin/deltafin/app"
)

func runApp(ctx context.Context, cfg app.Config, args []string) error {
	fs := newFlags("app", "", &cfg)
	fs.DurationVar(&cfg.NotifyAfter, "notify-after", cfg.NotifyAfter, "notify when an answer takes longer than this (0: never)")
	fs.DurationVar(&cfg.WarmIdleAfter, "warm-idle-after", cfg.WarmIdleAfter, "overnight warming starts after this long without input")
	if err := parse(fs, args, &cfg); err != nil {
		return err
	}
	deps, err := app.MenuBarDeps(cfg)
	if err != nil {
		return err
	}
	return app.RunMenuBar(ctx, cfg, deps, slog.New(slog.NewTextHandler(os.Stderr, nil)))
}
