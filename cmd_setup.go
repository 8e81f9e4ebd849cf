package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/deltafin/deltafin/app"
	"github.com/deltafin/deltafin/downloader"
)

// hubFlags binds the model-source flags shared by setup, fetch-experts and warm.
func hubFlags(fs *flag.FlagSet, cfg *app.Config) {
	fs.StringVar(&cfg.Repo, "repo", cfg.Repo, "hub repository owner/name")
	fs.StringVar(&cfg.Revision, "revision", cfg.Revision, "revision (commit, branch or tag); a commit pins the content")
	fs.IntVar(&cfg.Jobs, "jobs", cfg.Jobs, "parallel range requests")
}

func runSetup(ctx context.Context, cfg app.Config, args []string) error {
	fs := newFlags("setup", "", &cfg)
	hubFlags(fs, &cfg)
	stream := fs.Bool("stream", false, "download metadata and the spine; experts arrive on demand")
	full := fs.Bool("full", false, "download everything (about 1.6 TB for K3)")
	auto := fs.Bool("auto", false, "full if 100 GB stay free afterwards, else stream (the default)")
	dryRun := fs.Bool("dry-run", false, "print each mode's totals and what is present, download nothing")
	if err := parse(fs, args, &cfg); err != nil {
		return err
	}
	opts := app.SetupOptions{Mode: downloader.Auto, DryRun: *dryRun}
	n := 0
	for _, m := range []struct {
		set  bool
		mode downloader.Mode
	}{{*stream, downloader.Stream}, {*full, downloader.Full}, {*auto, downloader.Auto}} {
		if m.set {
			opts.Mode = m.mode
			n++
		}
	}
	if n > 1 {
		fmt.Fprintln(fs.Output(), "choose one of --stream, --full and --auto")
		return errUsage
	}
	return app.Setup(ctx, cfg, opts, os.Stdout)
}
