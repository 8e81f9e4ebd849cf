package main

import (
	"context"
	"flag"
	"os"

	"github.com/deltafin/deltafin/app"
)

// addRAMFlag binds --ram-gb, shared by the commands that load a model.
func addRAMFlag(fs *flag.FlagSet, cfg *app.Config) {
	fs.Float64Var(&cfg.RAMGB, "ram-gb", cfg.RAMGB, "plan memory as if the machine had this many GB (default: measured)")
}

// addStreamFlags binds the flags of the commands that generate: --ram-gb
// and --trace.
func addStreamFlags(fs *flag.FlagSet, cfg *app.Config) {
	addRAMFlag(fs, cfg)
	fs.StringVar(&cfg.Trace, "trace", cfg.Trace, "write the router's expert choices to this file (JSON lines)")
	fs.StringVar(&cfg.Spine, "spine", cfg.Spine, "spine weights: bf16 (exact) or int8 (the convert-spine-int8 copy: half the bytes, NOT exact)")
}

// runBenchSlice is `deltafin bench slice`.
func runBenchSlice(ctx context.Context, cfg app.Config, args []string) error {
	fs := newFlags("bench slice", "", &cfg)
	addRAMFlag(fs, &cfg)
	var o app.BenchSliceOptions
	fs.IntVar(&o.MoELayers, "moe-layers", 0, "MoE layers in the synthetic slice (default: enough for 1.5 × RAM)")
	fs.BoolVar(&o.JSON, "json", false, "print the report as JSON")
	fs.IntVar(&o.Tokens, "tokens", 8, "decode tokens to measure")
	fs.IntVar(&o.Prefill, "prefill", 0, "also time a prompt of this many tokens through the engine (time to first token, expert read amplification)")
	fs.BoolVar(&o.Int8, "int8", false, "also convert the slice's spine to int8 (once) and compare its logits with BF16")
	fs.BoolVar(&o.Engine, "engine", true, "also decode with the engine's forward pass over the slice")
	fs.StringVar(&o.EnginePlan, "engine-plan", "both", "engine runs: natural (the slice's own RAM plan), streamed (the spine pinned as the full K3's on this machine: head pinned, layers streamed) or both")
	fs.BoolVar(&o.Synthetic, "synthetic", true, "run the synthetic decode loops (false: only (a), the compute primitives and the engine runs)")
	fs.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of each engine decode to PATH-natural.pprof and PATH-streamed.pprof")
	if err := parse(fs, args, &cfg); err != nil {
		return err
	}
	return app.BenchSlice(ctx, cfg, o, os.Stdout, os.Stderr)
}
