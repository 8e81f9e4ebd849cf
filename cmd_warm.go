package main

import (
	"context"

	"github.com/deltafin/deltafin/app"
)

func runWarm(ctx context.Context, cfg app.Config, args []string) error {
	fs := newFlags("warm", "", &cfg)
	if err := parse(fs, args, &cfg); err != nil {
		return err
	}
	return errNotLanded{"warm", 7, "setup and downloads"}
}
