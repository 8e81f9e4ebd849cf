package main

import (
	"context"

	"github.com/deltafin/deltafin/app"
)

func runBench(ctx context.Context, cfg app.Config, args []string) error {
	fs := newFlags("bench", "", &cfg)
	if err := parse(fs, args, &cfg); err != nil {
		return err
	}
	return errNotLanded{"bench", 5, "kernels and benchmarks"}
}
