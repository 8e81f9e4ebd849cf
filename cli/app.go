package cli

import (
	"context"
	"errors"
	"flag"
	"io/fs"

	"github.com/deltafin/deltafin/app"
)

// App returns `deltafin app` (the default with no arguments): the menu-bar
// app, with the server, the downloader and the engine in this process.
// demo is the built-in demo model, served while nothing is installed.
func App(demo func() (fs.FS, error)) func(ctx context.Context, c *Call) error {
	return func(ctx context.Context, c *Call) error {
		cfg := &c.Config
		fs := c.flags("")
		addrFlags(fs, cfg)
		fs.DurationVar(&cfg.NotifyAfter, "notify-after", cfg.NotifyAfter, "notify when an answer takes longer than this (0: never)")
		fs.DurationVar(&cfg.WarmIdleAfter, "warm-idle-after", cfg.WarmIdleAfter, "overnight warming starts after this long without input")
		fs.Float64Var(&cfg.KeepFreeGB, "keep-free", 100, "GB of disk the menu's downloads and warming leave free")
		addUnverifiedFlag(fs, cfg)
		if err := c.parse(fs, c.Args); err != nil {
			return err
		}
		if err := cfg.Server.Validate(); err != nil {
			return err
		}
		lock, err := app.LockDataDir(cfg.DataDir)
		if err != nil {
			return err
		}
		defer lock.Close()
		if err := app.RememberedAddress(cfg); err != nil {
			return err
		}
		given := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
		if err := app.RememberedSettings(cfg, func(name string) bool { return given[name] }); err != nil {
			return err
		}
		logger := app.NewLogger(*cfg, c.Stderr)
		defer logger.Close()
		log := logger.Logger
		d, err := demo()
		if err != nil {
			return err
		}
		deps, err := app.MenuBarDeps(*cfg, d, log)
		if err != nil {
			return err
		}
		deps.Serving = func(url string) {
			if err := lock.SetURL(url); err != nil {
				log.Warn("instance lock", "err", err)
			}
		}
		return app.RunMenuBar(ctx, *cfg, deps, log, c.Stderr)
	}
}

// addrFlags binds --host and --port; either marks the address as given, so
// the app uses (and remembers) it instead of the remembered one.
func addrFlags(fs *flag.FlagSet, cfg *app.Config) {
	sc := &cfg.Server
	given := func(set func(string) error) func(string) error {
		return func(v string) error {
			sc.AddrGiven = true
			return set(v)
		}
	}
	fs.Func("host", "address to listen on (default "+sc.Host+"; also DELTAFIN_HOST); anything but loopback exposes the model (set --api-key)",
		given(func(v string) error { sc.Host = v; return nil }))
	fs.Func("port", "port to listen on (default "+itoa(sc.Port)+"; also DELTAFIN_PORT); the app takes the next free one when it is in use",
		given(func(v string) error { return parsePort(v, &sc.Port) }))
}

var errBadPort = errors.New("want a port number 0..65535")
