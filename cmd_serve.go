package main

import (
	"context"

	"github.com/deltafin/deltafin/app"
)

func runServe(ctx context.Context, cfg app.Config, args []string) error {
	fs := newFlags("serve", "", &cfg)
	addStreamFlags(fs, &cfg)
	if err := parse(fs, args, &cfg); err != nil {
		return err
	}
	return errNotLanded{"serve", 8, "the OpenAI-compatible server"}
}
