package cli

import (
	"context"
	"io/fs"
	"log/slog"

	"github.com/deltafin/deltafin/app"
)

// App returns `deltafin app` (the default with no arguments): the menu-bar
// app, with the server, the downloader and the engine in this process.
// demo is the built-in demo model, served while nothing is installed.
func App(demo func() (fs.FS, error)) func(ctx context.Context, c *Call) error {
	return func(ctx context.Context, c *Call) error {
		cfg := &c.Config
		fs := c.flags("")
		fs.DurationVar(&cfg.NotifyAfter, "notify-after", cfg.NotifyAfter, "notify when an answer takes longer than this (0: never)")
		fs.DurationVar(&cfg.WarmIdleAfter, "warm-idle-after", cfg.WarmIdleAfter, "overnight warming starts after this long without input")
		if err := c.parse(fs, c.Args); err != nil {
			return err
		}
		log := slog.New(slog.NewTextHandler(c.Stderr, nil))
		d, err := demo()
		if err != nil {
			return err
		}
		deps, err := app.MenuBarDeps(*cfg, d, log)
		if err != nil {
			return err
		}
		return app.RunMenuBar(ctx, *cfg, deps, log)
	}
}
