package main

import (
	"os"

	"context"

	"github.com/deltafin/deltafin/app"
)

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return "" }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func runWarm(ctx context.Context, cfg app.Config, args []string) error {
	fs := newFlags("warm", "", &cfg)
	hubFlags(fs, &cfg)
	var opts app.WarmOptions
	fs.Var((*stringList)(&opts.Traces), "trace", "router trace file (repeatable; default: DATA_DIR/router_trace*.jsonl)")
	fs.StringVar(&opts.Heat, "heat", "", "heat histogram, JSON lines {layer, expert, heat} (default: DATA_DIR/expert_heat.jsonl if present)")
	fs.IntVar(&opts.Fetch, "fetch", 0, "download the top N missing experts (default: print the plan only)")
	fs.IntVar(&opts.Show, "show", 20, "lines of the ranking to print")
	if err := parse(fs, args, &cfg); err != nil {
		return err
	}
	return app.Warm(ctx, cfg, opts, os.Stdout)
}
