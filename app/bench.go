package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/deltafin/deltafin/kernels"
)

// BenchKernelsOptions are `deltafin bench kernels`'s flags.
type BenchKernelsOptions struct {
	JSON        bool
	BufferBytes int           // 0: 1 GiB
	MinTime     time.Duration // per figure; 0: 300 ms
}

// BenchKernels measures the memory read bandwidth and every kernel against
// it on the backend cfg.Kernels names, and prints the report as a table or
// as JSON.
func BenchKernels(ctx context.Context, cfg Config, w io.Writer, opt BenchKernelsOptions) error {
	rep, err := kernels.Bench(ctx, kernels.BenchOptions{Backend: cfg.Kernels, BufferBytes: opt.BufferBytes, MinTime: opt.MinTime})
	if err != nil {
		return fmt.Errorf("app: bench kernels: %w", err)
	}
	if opt.JSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	fmt.Fprintf(w, "backend %s; memory read %.1f GB/s with %d threads (%.1f GB/s with 1), over %d MiB\n\n",
		rep.Backend, rep.MemReadGBps, rep.MemThreads, rep.MemReadOneGBps, rep.BufferBytes>>20)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "kernel\tthreads\tGB/s\tratio to memory read\tpaired ratio\t")
	for _, k := range rep.Kernels {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.2f\t%.2f\t\n", k.Name, k.Threads, k.GBps, k.Ratio, k.PairedRatio)
	}
	return tw.Flush()
}
