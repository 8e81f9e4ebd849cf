package main

import (
	"context"
	"os"

	"github.com/deltafin/deltafin/app"
)

func runDoctor(ctx context.Context, cfg app.Config, args []string) error {
	fs := newFlags("doctor", "", &cfg)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if err := parse(fs, args, &cfg); err != nil {
		return err
	}
	return app.Doctor(ctx, cfg, os.Stdout, *asJSON)
}
