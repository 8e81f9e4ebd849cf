package main

import (
	"os"

	"context"

	"github.com/deltafin/deltafin/app"
)

func runFetchExperts(ctx context.Context, cfg app.Config, args []string) error {
	fs := newFlags("fetch-experts", "", &cfg)
	hubFlags(fs, &cfg)
	layers := fs.String("layers", "", "only the experts of these MoE layers, e.g. 1-40,45 (default: everything missing)")
	dryRun := fs.Bool("dry-run", false, "print what would be downloaded")
	if err := parse(fs, args, &cfg); err != nil {
		return err
	}
	return app.FetchExperts(ctx, cfg, app.FetchOptions{Layers: *layers, DryRun: *dryRun}, os.Stdout)
}
