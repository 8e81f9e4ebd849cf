package main

import (
	"context"

	"github.com/deltafin/deltafin/app"
)

func runSetup(ctx context.Context, cfg app.Config, args []string) error {
	fs := newFlags("setup", "", &cfg)
	if err := parse(fs, args, &cfg); err != nil {
		return err
	}
	return errNotLanded{"setup", 7, "setup and downloads"}
}
