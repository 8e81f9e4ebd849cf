package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/deltafin/deltafin/bench"
)

// gbpsList is a comma-separated list of positive GB/s figures
// (--drive-gbps 1.0,0.5,0.5).
type gbpsList []float64

func (l *gbpsList) String() string {
	parts := make([]string, len(*l))
	for i, v := range *l {
		parts[i] = strconv.FormatFloat(v, 'g', -1, 64)
	}
	return strings.Join(parts, ",")
}

func (l *gbpsList) Set(s string) error {
	*l = nil
	for _, p := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || !(v > 0) {
			return fmt.Errorf("%q is not a positive GB/s figure", p)
		}
		*l = append(*l, v)
	}
	return nil
}

// benchSliceDrives is `bench slice --drive-gbps`: the read scheduler over
// simulated drives of the bandwidths given (bench.BenchDrives).
func benchSliceDrives(ctx context.Context, dir string, layout bench.SliceLayout, o BenchSliceOptions, out, log io.Writer) error {
	r, err := bench.BenchDrives(ctx, bench.DriveBenchOptions{
		Dir: dir, Layers: layout.Layers, GBps: o.DriveGBps, Tokens: o.Tokens, Seed: o.Seed, Rounds: 3,
		Log: func(f string, a ...any) { fmt.Fprintf(log, f+"\n", a...) },
	})
	if err != nil {
		return fmt.Errorf("bench slice: %w", err)
	}
	if o.JSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	fmt.Fprintf(out, "expert reads over %d simulated drives (token buckets over page-cached copies): %.2f GB/s of %.2f GB/s summed limits = %.2f (target 0.85); %.3f s/token; %d bytes from the mirror\n",
		len(r.Drives), r.GBps, r.LimitGBps, r.Ratio, r.SecondsPerTok, r.MirrorBytes)
	fmt.Fprintf(out, "  one simulated drive at the summed limit, alternating with the drives (what these cores deliver through this path): %.2f GB/s; the drives reach %.2f of it (the median of %d rounds; each round's ratio to the limits: %s)\n",
		r.ControlGBps, r.ControlRatio, r.Rounds, fmtGBps(r.RoundRatios, ", "))
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DRIVE\tLIMIT GB/S\tGB/S\tOF LIMIT\tBYTE SHARE\tLIMIT SHARE\tBUSY\tIDLE WITH A READ QUEUED\tREADERS")
	for _, d := range r.Drives {
		fmt.Fprintf(tw, "%s\t%.2f\t%.3f\t%.2f\t%.3f\t%.3f\t%.1f%%\t%.2f%%\t%d\n",
			d.Name, d.LimitGBps, d.GBps, d.GBps/d.LimitGBps, d.Share, d.Fair, 100*d.Busy, 100*d.Starved, d.Readers)
	}
	return tw.Flush()
}
