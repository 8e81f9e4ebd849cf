package main

import (
	"context"

	"github.com/deltafin/deltafin/app"
)

func runBench(ctx context.Context, cfg app.Config, args []string) error {
	if len(args) > 0 && args[0] == "slice" {
		return runBenchSlice(ctx, cfg, args[1:])
	}
	fs := newFlags("bench", "", &cfg)
	addRAMFlag(fs, &cfg)
	if err := parse(fs, args, &cfg); err != nil {
		return err
	}
	return errNotLanded{"bench", 5, "kernels and benchmarks"}
}
