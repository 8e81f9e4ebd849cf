package main

import (
	"context"

	"github.com/deltafin/deltafin/app"
)

func runFetchExperts(ctx context.Context, cfg app.Config, args []string) error {
	fs := newFlags("fetch-experts", "", &cfg)
	if err := parse(fs, args, &cfg); err != nil {
		return err
	}
	return errNotLanded{"fetch-experts", 7, "setup and downloads"}
}
