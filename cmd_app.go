package main

import (
	"context"

	"github.com/deltafin/deltafin/app"
)

func runApp(ctx context.Context, cfg app.Config, args []string) error {
	fs := newFlags("app", "", &cfg)
	if err := parse(fs, args, &cfg); err != nil {
		return err
	}
	return errNotLanded{"app", 9, "the menu-bar app"}
}
