package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/deltafin/deltafin/app"
)

// runBench dispatches on the target, the first argument: `bench kernels`
// (issue #5) or `bench slice` (issue #6).
func runBench(ctx context.Context, cfg app.Config, args []string) error {
	target := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		target, args = args[0], args[1:]
	}
	if target == "slice" {
		return runBenchSlice(ctx, cfg, args) // its own flags (cmd_bench_slice.go)
	}
	fs := newFlags("bench", "kernels|slice", &cfg)
	var opt app.BenchKernelsOptions
	fs.BoolVar(&opt.JSON, "json", false, "print the report as JSON")
	bufMiB := fs.Int("buffer-mib", 1024, "buffer the memory read and the weights stream over (MiB; keep it far above the last-level cache)")
	fs.DurationVar(&opt.MinTime, "time", 0, "how long each figure is measured (default 300ms)")
	gpu := fs.Bool("gpu", true, "also bench the GPU backends present (false: the CPU backend only)")
	fs.StringVar(&opt.Only, "only", "", "bench only the kernels whose name contains this, e.g. MXFP4 or expert")
	if err := parse(fs, args, &cfg); err != nil {
		return err
	}
	opt.BufferBytes = *bufMiB << 20
	opt.NoGPU = !*gpu
	switch target {
	case "kernels":
		return app.BenchKernels(ctx, cfg, os.Stdout, opt)
	case "":
		fmt.Fprintln(fs.Output(), "deltafin bench needs a target: kernels or slice")
	default:
		fmt.Fprintf(fs.Output(), "unknown bench target %q: want kernels or slice\n", target)
	}
	fs.Usage()
	return errUsage
}
