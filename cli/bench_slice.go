package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/deltafin/deltafin/app"
	"github.com/deltafin/deltafin/bench"
	"github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/engine"
	"github.com/deltafin/deltafin/experts"
	"github.com/deltafin/deltafin/internal/sysinfo"
	"github.com/deltafin/deltafin/kernels"
)

// benchSliceCmd is `deltafin bench slice`.
func benchSliceCmd(ctx context.Context, c *Call, args []string) error {
	cfg := &c.Config
	fs := c.flags("")
	addRAMFlag(fs, cfg)
	var o BenchSliceOptions
	fs.IntVar(&o.MoELayers, "moe-layers", 0, "MoE layers in the synthetic slice (default: enough for 1.5 × RAM)")
	fs.BoolVar(&o.JSON, "json", false, "print the report as JSON")
	fs.IntVar(&o.Tokens, "tokens", 8, "decode tokens to measure")
	fs.IntVar(&o.Prefill, "prefill", 0, "also time a prompt of this many tokens through the engine (time to first token, expert read amplification)")
	fs.BoolVar(&o.PrefillWarm, "prefill-warm", false, "with --prefill, run the same prompt again on the same model, its experts in the cache the first pass filled: the prompt's compute without the disk")
	fs.BoolVar(&o.Mirror, "mirror", false, "also run the engine decode (the slice's own plan) and, with --prefill, the prompt over the slice installed as a full mirror, read as an installed model is (the mirror's Sources, each expert's Ensure then chunked direct reads)")
	fs.BoolVar(&o.Int8, "int8", false, "also convert the slice's spine to int8 (once) and compare its logits with BF16")
	fs.BoolVar(&o.Engine, "engine", true, "also decode with the engine's forward pass over the slice")
	fs.StringVar(&o.EnginePlan, "engine-plan", "both", "engine runs: natural (the slice's own RAM plan), streamed (the spine pinned as the full K3's on this machine: head pinned, layers streamed) or both")
	fs.BoolVar(&o.Synthetic, "synthetic", true, "run the synthetic decode loops (false: only (a), the compute primitives and the engine runs)")
	fs.Uint64Var(&o.Seed, "seed", 1, "seed of the synthetic routes (the same seed replays the same routes)")
	fs.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of each engine decode to PATH-natural.pprof and PATH-streamed.pprof, and of the prefill to PATH-prefill.pprof")
	fs.Func("draft", "also decode under the streamed plan with T = 1 and with the oracle drafter at each acceptance, e.g. oracle:0.3,0.6,0.9 (s and bytes per accepted token against T = 1)", func(v string) error {
		var err error
		o.Drafts, err = parseOracleRates(v)
		return err
	})
	fs.Var((*gbpsList)(&o.DriveGBps), "drive-gbps", "measure only the multi-drive read scheduler over simulated drives of these GB/s, e.g. 1.0,0.5,0.5 (bench_drives.go)")
	if err := c.parse(fs, args); err != nil {
		return err
	}
	return benchSlice(ctx, *cfg, o, c.Stdout, c.Stderr)
}

// BenchSliceOptions are the flags of `deltafin bench slice`.
type BenchSliceOptions struct {
	Seed      uint64 // of the synthetic routes
	MoELayers int    // 0: the fewest layers making the slice ≥ 1.5 × RAM
	JSON      bool   // print the report as JSON instead of text
	Tokens    int    // measured decode tokens (0: 8)
	Engine    bool   // also decode with the engine's forward pass over the slice
	// EnginePlan picks the engine runs: "natural" (the slice's own budget
	// plan), "streamed" (the spine pinned in the full K3's proportion on
	// this machine: the head pinned, the layers streamed) or "both".
	EnginePlan string
	Synthetic  bool   // run the synthetic decode loops (b)
	CPUProfile string // write a CPU profile of each engine decode to PATH-natural.pprof, PATH-streamed.pprof, of the prefill to PATH-prefill.pprof
	Prefill    int    // prompt tokens for the prefill measurement (0: none)
	// PrefillWarm runs the prompt a second time, its experts cached.
	PrefillWarm bool
	Int8        bool      // compare the int8 spine with BF16 (converts the slice's spine once)
	Mirror      bool      // also decode (and prefill) over the slice installed as a mirror
	DriveGBps   []float64 // --drive-gbps: only the multi-drive scheduler over simulated drives
	Drafts      []float64 // --draft oracle:R,…: the oracle drafter's acceptances to measure against T = 1
}

// parseOracleRates reads --draft oracle:R1,R2,… of bench slice.
func parseOracleRates(v string) ([]float64, error) {
	list, ok := strings.CutPrefix(v, "oracle:")
	if !ok {
		return nil, fmt.Errorf("--draft %q: bench slice measures the oracle drafter: want oracle:R or oracle:R1,R2,…", v)
	}
	var out []float64
	for _, r := range strings.Split(list, ",") {
		d, err := engine.ParseDraft("oracle:" + strings.TrimSpace(r))
		if err != nil {
			return nil, err
		}
		out = append(out, d.Rate)
	}
	return out, nil
}

// BenchSlice creates (once, in the data directory) a synthetic checkpoint
// with K3's real per-layer shapes larger than RAM, then measures the disk's
// parallel read bandwidth, steady decode through the expert store, and
// projects the full K3 on this machine. Progress goes to log, the report to
// out.
func benchSlice(ctx context.Context, cfg app.Config, o BenchSliceOptions, out, log io.Writer) error {
	backend, err := kernels.ByName(cfg.Kernels) // DELTAFIN_KERNELS
	if err != nil {
		return err
	}
	mem, err := sysinfo.ReadMemory()
	if err != nil {
		return err
	}
	ram := int64(mem.Total)
	if cfg.RAMGB > 0 {
		ram = int64(cfg.RAMGB * 1e9)
	}
	layers := o.MoELayers
	if layers == 0 {
		layers = bench.SliceLayersFor(ram * 3 / 2)
	}
	layout, err := bench.NewSliceLayout(layers)
	if err != nil {
		return err
	}
	dir := filepath.Join(cfg.DataDir, "bench-slice")
	fmt.Fprintf(log, "slice: %d MoE layers with K3's shapes (vocabulary 163840, hidden 7168, 896 MXFP4 experts each), %.2f GB in %s (%.2f× RAM)\n",
		layers, float64(layout.TotalBytes)/1e9, dir, float64(layout.TotalBytes)/float64(ram))
	if missing := layout.SliceMissingBytes(dir); missing > 0 {
		fmt.Fprintf(log, "slice: writing %.2f GB (resumable; reused by later runs)\n", float64(missing)/1e9)
	}
	var written, shown int64
	start := time.Now()
	err = layout.CreateSlice(ctx, dir, sysinfo.FreeDisk, func(n int64) {
		written += n
		if written-shown >= 4e9 {
			shown = written
			fmt.Fprintf(log, "slice: %.0f GB written, %.2f GB/s\n", float64(written)/1e9, float64(written)/1e9/time.Since(start).Seconds())
		}
	})
	if err != nil {
		return fmt.Errorf("bench slice: %w", err)
	}
	if len(o.DriveGBps) > 0 {
		return benchSliceDrives(ctx, dir, layout, o, out, log)
	}
	var override int64
	if cfg.RAMGB > 0 {
		override = ram
	}
	in := experts.BudgetInput{
		TotalRAM: int64(mem.Total), AvailableRAM: int64(mem.Available), OverrideRAM: override,
		GlobalBytes: layout.GlobalBytes, LayerBytes: layout.SpineBytes, WorkingBytes: bench.StoreWorkingBytes(),
		SpanBytes: checkpoint.ExpertSpanBytes, MoELayers: layers, ExpertsPerLayer: 896, TopK: 16,
	}
	plan, err := experts.PlanBudget(in)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "slice %s\n", plan)
	eo := bench.SliceBenchOptions{
		Dir: dir, Layout: layout, Plan: plan, Prefill: o.Prefill, PrefillWarm: o.PrefillWarm, Int8: o.Int8, Mirror: o.Mirror, Backend: backend, Tokens: o.Tokens, Warmup: 2, Seed: o.Seed,
		Drafts:        o.Drafts,
		SkipSynthetic: !o.Synthetic,
		RAM:           experts.BudgetInput{TotalRAM: int64(mem.Total), AvailableRAM: int64(mem.Available), OverrideRAM: override},
		Log:           func(f string, a ...any) { fmt.Fprintf(log, f+"\n", a...) },
	}
	if o.Engine {
		switch o.EnginePlan {
		case "", "both":
			eo.Engine, eo.EngineStreamed = true, true
		case "natural":
			eo.Engine = true
		case "streamed":
			eo.EngineStreamed = true
		default:
			return fmt.Errorf("bench slice: --engine-plan %q: want natural, streamed or both", o.EnginePlan)
		}
	}
	if o.CPUProfile != "" {
		eo.Profile = func(run string) func() {
			return startCPUProfile(fmt.Sprintf("%s-%s.pprof", o.CPUProfile, run), log)
		}
	}
	rep, err := bench.BenchSlice(ctx, eo)
	if err != nil {
		return fmt.Errorf("bench slice: %w", err)
	}
	if o.JSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	fmt.Fprintf(out, "disk parallel read (a): %.2f GB/s (%s; page cache bypassed)\n", rep.Bandwidth[0].GBPerSecond, rep.ChosenMode)
	if o.Synthetic {
		fmt.Fprintf(out, "steady decode (b): %.3f s/token, %.1f MB/token from disk, ratio %.2f (target 0.85); reads alone: ratio %.2f\n",
			rep.Decode.SecondsPerToken, rep.Decode.DiskBytesPerToken/1e6, rep.Decode.Ratio, rep.DecodeIO.Ratio)
	}
	if d := rep.EngineStreamed; d != nil {
		p := rep.StreamedPlan
		fmt.Fprintf(out, "engine forward over the slice, spine as K3's on this machine (head pinned, %d of %d layers pinned, %d experts cached; K3: head and %d of 93 layers): %.3f s/token, %.1f MB/token from disk (%.1f MB spine), ratio %.2f (target 0.85; backend %s)\n",
			p.PinnedLayers, len(layout.Layers), p.CacheExperts, rep.K3Plan.PinnedLayers, d.SecondsPerToken, d.DiskBytesPerToken/1e6, d.SpineBytesPerToken/1e6, d.Ratio, rep.Backend)
		fmt.Fprintf(out, "  the same reads without compute: %.2f GB/s (%.2f of (a): a spine re-read every token is served faster, the host caches the virtual disk); the decode reaches %.2f of it; disk idle %.1f%% of the time, %.1f reads in flight on average\n",
			d.IOOnlyGBPerSecond, d.IOOnlyGBPerSecond/rep.Bandwidth[0].GBPerSecond, d.IORatio, 100*d.DiskIdle, d.MeanInFlight)
		pr := bench.ProjectSlice(rep, layout) // bench project's model, checked here (bench_project.go)
		fmt.Fprintf(out, "  bench project's model for this run: disk %.3f s, compute %.3f s (spine %.3f, experts %.3f): %.3f s/token overlapped, %.3f serial; measured %.3f (%.2f of the projection)\n",
			pr.DiskSeconds, pr.ComputeSeconds(), pr.SpineSeconds, pr.ExpertSeconds, pr.Overlapped, pr.Serial, d.SecondsPerToken, d.SecondsPerToken/pr.Overlapped)
	}
	if d := rep.EngineDecode; d != nil {
		fmt.Fprintf(out, "engine forward over the slice, its own plan (spine pinned): %.3f s/token, %.1f MB/token from disk, ratio %.2f (backend %s); speculation %.0f%% accepted of %d passes, %.2f tokens/pass\n",
			d.SecondsPerToken, d.DiskBytesPerToken/1e6, d.Ratio, rep.Backend, 100*d.SpecAcceptRate, d.SpecPasses, d.TokensPerPass)
	}
	if len(rep.Drafting) > 0 {
		fmt.Fprintf(out, "drafting over the slice, spine as K3's on this machine (%d measured tokens each, the same tokens; backend %s, %d threads):\n", o.Tokens, rep.Backend, runtime.NumCPU())
		fmt.Fprintf(out, "  %-11s %12s %10s %14s %10s %13s %9s %8s\n", "draft", "s/token", "vs T=1", "MB/token", "vs T=1", "target passes", "accepted", "T/pass")
		for _, d := range rep.Drafting {
			fmt.Fprintf(out, "  %-11s %12.3f %9.2f× %14.1f %10.2f %13d %4d/%-4d %8.2f\n",
				d.Draft, d.SecondsPerToken, d.SpeedupVsT1, d.DiskBytesPerToken/1e6, d.BytesVsT1, d.TargetPasses, d.Accepted, d.Drafted, d.MeanT)
		}
	}
	if p := rep.EnginePrefill; p != nil {
		a := rep.Bandwidth[0].GBPerSecond
		fmt.Fprintf(out, "prefill of %d tokens: time to first token %.2f s; read amplification %.4f (target 1.05; %d distinct experts, token-major %.2f×)\n",
			p.Tokens, p.TimeToFirstToken, p.ReadAmplification, p.DistinctExperts, p.TokenMajorAmplification)
		fmt.Fprintf(out, "  the same experts read once without compute: %.2f s; TTFT %.2f× that (target 1.3); of the TTFT %.2f s waiting for expert bytes, %.2f s compute; disk idle %.2f s (backend %s, %d threads)\n",
			p.ReadsAlone, p.TTFTRatio, p.ExpertWait, p.Compute, p.DiskIdle, rep.Backend, runtime.NumCPU())
		fmt.Fprintf(out, "  open: %.2f s; index and validation %.2f s; pinned spine %.2f GB in %.2f s = %.2f GB/s, %.2f of (a) (%d readers, direct %v)\n",
			p.OpenTotal, p.Open.IndexSeconds, float64(p.Open.PinnedBytes)/1e9, p.Open.PinnedSeconds, p.PinnedGBps, p.PinnedGBps/a, p.Open.Readers, p.Open.Direct)
		if w := p.Warm; w != nil {
			fmt.Fprintf(out, "prefill of %d tokens again, experts cached: time to first token %.2f s (%.2f× the first pass); %.2f GB still read, %.2f s waiting for it\n",
				p.Tokens, w.TimeToFirstToken, p.TimeToFirstToken/w.TimeToFirstToken, float64(w.DiskBytes)/1e9, w.ExpertWait)
		}
	}
	if d := rep.MirrorDecode; d != nil {
		fmt.Fprintf(out, "engine forward over the slice installed as a mirror, its own plan: %.3f s/token, %.1f MB/token from disk, ratio %.2f", d.SecondsPerToken, d.DiskBytesPerToken/1e6, d.Ratio)
		if e := rep.EngineDecode; e != nil {
			fmt.Fprintf(out, " (plain files: %.3f s/token, ratio %.2f; mirror ÷ plain %.2f)", e.SecondsPerToken, e.Ratio, d.SecondsPerToken/e.SecondsPerToken)
		}
		fmt.Fprintln(out)
	}
	if p := rep.MirrorPrefill; p != nil {
		fmt.Fprintf(out, "prefill of %d tokens over the mirror: time to first token %.2f s, %.2f× the reads alone, amplification %.4f", p.Tokens, p.TimeToFirstToken, p.TTFTRatio, p.ReadAmplification)
		if e := rep.EnginePrefill; e != nil {
			fmt.Fprintf(out, " (plain files: %.2f s, %.2f×; mirror ÷ plain %.2f)", e.TimeToFirstToken, e.TTFTRatio, p.TimeToFirstToken/e.TimeToFirstToken)
		}
		fmt.Fprintln(out)
	}
	if q := rep.EngineInt8; q != nil {
		fmt.Fprintf(out, "int8 spine (NOT exact) vs BF16: max |Δlogit| %.4g (BF16 logits span %.4g), top-1 agreement %.0f%% over %d positions; spine %.2f → %.2f GB\n",
			q.MaxLogitDev, q.LogitRange, 100*q.Top1Agree, q.Positions, float64(q.SpineBytes[0])/1e9, float64(q.SpineBytes[1])/1e9)
	}
	fmt.Fprintf(out, "K3 (93 layers) on this machine: %s\n", rep.K3Plan)
	fmt.Fprintf(out, "K3 projected: %.1f s/token with reads overlapped, %.1f s/token serial (backend %s)\n",
		rep.K3SecondsPerTok[0], rep.K3SecondsPerTok[1], rep.Backend)
	return nil
}

// startCPUProfile profiles the process into path until the returned
// function runs; a profile that cannot start is reported and skipped.
func startCPUProfile(path string, log io.Writer) func() {
	f, err := os.Create(path)
	if err == nil {
		if err = pprof.StartCPUProfile(f); err != nil {
			f.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(log, "cpu profile: %v\n", err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintf(log, "cpu profile: %v\n", err)
		}
		fmt.Fprintf(log, "cpu profile: %s\n", path)
	}
}
