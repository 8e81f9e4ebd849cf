package main

import (
	"context"

	"github.com/deltafin/deltafin/app"
)

func runRun(ctx context.Context, cfg app.Config, args []string) error {
	fs := newFlags("run", "", &cfg)
	addStreamFlags(fs, &cfg)
	if err := parse(fs, args, &cfg); err != nil {
		return err
	}
	return errNotLanded{"run", 3, "the K3 engine"}
}
