package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/deltafin/deltafin/app"
	"github.com/deltafin/deltafin/bench"
	"github.com/deltafin/deltafin/kernels"
)

// benchTargets are bench's subcommands, for its usage.
var benchTargets = [][2]string{
	{"kernels", "memory bandwidth and FMA peak, then each kernel as a ratio to them"},
	{"slice", "disk read bandwidth, steady decode over a K3-shaped slice, projected s/token of K3"},
	{"prefill", "s, tokens/s and FLOP ratio per prompt length (--model DIR --tokens ...)"},
	{"project", "K3's s/token on a machine (--ram-gb, --drive-gbps, --compute; --table for the Macs)"},
	{"heat", "the expert cache's hit rate on a router trace"},
}

// Bench dispatches on the target, the first argument: `bench kernels`
// (issue #5), `bench slice` (issue #6) `bench prefill` (issue #19),
// `bench project` or `bench heat`.
func Bench(ctx context.Context, c *Call) error {
	cfg := &c.Config
	target := ""
	args := c.Args
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		target, args = args[0], args[1:]
	}
	if target == "slice" {
		return benchSliceCmd(ctx, c, args) // its own flags (bench_slice.go)
	}
	if target == "prefill" {
		return benchPrefillCmd(ctx, c, args) // its own flags (bench_prefill.go)
	}
	if target == "project" {
		return benchProjectCmd(ctx, c, args) // its own flags (bench_project.go)
	}
	if target == "heat" {
		return benchHeatCmd(ctx, c, args) // its own flags (bench_heat.go)
	}
	fs := c.flags("kernels|slice|prefill|project|heat")
	usage := fs.Usage
	fs.Usage = func() {
		usage()
		fmt.Fprintf(fs.Output(), "\nTargets (each takes --help for its own flags):\n")
		for _, t := range benchTargets {
			fmt.Fprintf(fs.Output(), "  %-9s %s\n", t[0], t[1])
		}
		fmt.Fprintf(fs.Output(), "\nThe flags above are kernels'.\n")
	}
	var opt BenchKernelsOptions
	fs.BoolVar(&opt.JSON, "json", false, "print the report as JSON")
	bufMiB := fs.Int("buffer-mib", 1024, "buffer the memory read and the weights stream over (MiB; keep it far above the last-level cache)")
	fs.DurationVar(&opt.MinTime, "time", 0, "how long each figure is measured (default 300ms)")
	gpu := fs.Bool("gpu", true, "also bench the GPU backends present (false: the CPU backend only)")
	fs.StringVar(&opt.Only, "only", "", "bench only the kernels whose name contains this, e.g. MXFP4 or expert")
	if err := c.parse(fs, args); err != nil {
		return err
	}
	opt.BufferBytes = *bufMiB << 20
	opt.NoGPU = !*gpu
	switch target {
	case "kernels":
		return benchKernels(ctx, *cfg, c.Stdout, opt)
	case "":
		fmt.Fprintln(fs.Output(), "deltafin bench needs a target: kernels, slice, prefill, project or heat")
	default:
		fmt.Fprintf(fs.Output(), "unknown bench target %q: want kernels, slice, prefill, project or heat\n", target)
	}
	fs.Usage()
	return errUsage
}

// BenchKernelsOptions are `deltafin bench kernels`'s flags.
type BenchKernelsOptions struct {
	JSON        bool
	BufferBytes int           // 0: 1 GiB
	MinTime     time.Duration // per figure; 0: 300 ms
	// Shrink divides the rows of the main report's matrices (1 or 0: K3
	// sizes); tests use it to run in a moment.
	Shrink int
	// GPUShrink divides the rows of the GPU reports' matrices (1 or 0: K3
	// sizes); tests use it to bench the software Vulkan device quickly.
	GPUShrink int
	// NoGPU skips the GPU backends' reports (they take most of the run on
	// a software device such as lavapipe).
	NoGPU bool
	// Only keeps the kernels whose name contains it (empty: all).
	Only string
}

// BenchKernelsReport is the report of the backend cfg.Kernels names, plus
// one per GPU backend present (kernels.Registered) when that backend is a
// CPU one.
type BenchKernelsReport struct {
	bench.KernelsReport
	GPU []GPUBenchReport `json:"gpu,omitempty"`
}

// GPUBenchReport is a GPU backend's figures with the device they ran on.
// Its ratios are to the host's memory read, which bounds a GPU that reads
// the weights from host memory as these backends do.
type GPUBenchReport struct {
	Device string `json:"device"`
	bench.KernelsReport
}

// BenchKernels measures the memory read bandwidth and the fp32 FMA peak,
// and every kernel against them, on the backend cfg.Kernels names, and prints the report as a table or
// as JSON.
func benchKernels(ctx context.Context, cfg app.Config, w io.Writer, opt BenchKernelsOptions) error {
	main, err := bench.Kernels(ctx, bench.KernelsOptions{Backend: cfg.Kernels, BufferBytes: opt.BufferBytes, MinTime: opt.MinTime, Shrink: opt.Shrink, Only: opt.Only})
	if err != nil {
		return fmt.Errorf("bench kernels: %w", err)
	}
	rep := BenchKernelsReport{KernelsReport: main}
	gpus := kernels.Registered()
	if opt.NoGPU || slices.Contains(gpus, main.Backend) {
		gpus = nil // a GPU backend was asked for: its report is the main one
	}
	for _, name := range gpus {
		gopt := bench.KernelsOptions{Backend: name, BufferBytes: opt.BufferBytes, MinTime: opt.MinTime, Shrink: opt.GPUShrink, Only: opt.Only}
		if opt.GPUShrink > 1 {
			gopt.MaxPositions = 64 // a shrunk (test) run on a software GPU: the longer products take minutes there
		}
		g, err := bench.Kernels(ctx, gopt)
		if err != nil {
			return fmt.Errorf("bench kernels on %s: %w", name, err)
		}
		rep.GPU = append(rep.GPU, GPUBenchReport{Device: deviceOf(name), KernelsReport: g})
	}
	if opt.JSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	if err := writeBenchTable(w, main, ""); err != nil {
		return err
	}
	for _, g := range rep.GPU {
		fmt.Fprintln(w)
		if err := writeBenchTable(w, g.KernelsReport, g.Device); err != nil {
			return err
		}
	}
	return nil
}

// deviceOf describes the device of a GPU backend.
func deviceOf(name string) string {
	b, err := kernels.ByName(name)
	if err != nil {
		return ""
	}
	if d, ok := b.(interface{ Device() string }); ok {
		return d.Device()
	}
	return ""
}

func writeBenchTable(w io.Writer, rep bench.KernelsReport, device string) error {
	if device == "" {
		device = deviceOf(rep.Backend)
	}
	if device != "" {
		device = " on " + device
	}
	gpuPeak := ""
	if rep.GPUPeakGFLOPS > 0 {
		gpuPeak = fmt.Sprintf("; GPU fp32 FMA peak %.1f GFLOP/s", rep.GPUPeakGFLOPS)
	}
	fmt.Fprintf(w, "backend %s%s; memory read %.1f GB/s with %d threads (%.1f GB/s with 1), over %d MiB; fp32 FMA peak %.1f GFLOP/s%s\n\n",
		rep.Backend, device, rep.MemReadGBps, rep.MemThreads, rep.MemReadOneGBps, rep.BufferBytes>>20, rep.FMAPeakGFLOPS, gpuPeak)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	// The device's own columns (its clock: the shaders alone, and the
	// share of the call its copies took) only where a GPU timed something.
	timed := slices.ContainsFunc(rep.Kernels, func(k bench.KernelResult) bool { return k.DeviceCopyShare > 0 || k.DeviceGFLOPS > 0 })
	head := "kernel\tthreads\tGB/s\tratio to memory read\tpaired ratio\tGFLOP/s\tratio to FMA peak\t"
	if timed {
		head += "shaders GFLOP/s\tshaders' ratio to GPU peak\tcopies' share\t"
	}
	fmt.Fprintln(tw, head)
	for _, k := range rep.Kernels {
		gflops, ratio := "-", "-"
		if k.GFLOPS > 0 {
			gflops, ratio = fmt.Sprintf("%.1f", k.GFLOPS), fmt.Sprintf("%.3f", k.FLOPRatio)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.2f\t%.2f\t%s\t%s\t", k.Name, k.Threads, k.GBps, k.Ratio, k.PairedRatio, gflops, ratio)
		if timed {
			dg, dr, share := "-", "-", "-"
			if k.DeviceGFLOPS > 0 {
				dg, dr = fmt.Sprintf("%.1f", k.DeviceGFLOPS), fmt.Sprintf("%.3f", k.DeviceFLOPRatio)
			}
			if k.DeviceGFLOPS > 0 || k.DeviceCopyShare > 0 {
				share = fmt.Sprintf("%.2f", k.DeviceCopyShare)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t", dg, dr, share)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}
