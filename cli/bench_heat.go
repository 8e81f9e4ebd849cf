package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/deltafin/deltafin/bench"
)

// benchHeatCmd is `deltafin bench heat`: the expert cache's hit rate on a
// recorded router trace, per cache size and heat half-life
// (bench.TraceHitRates).
func benchHeatCmd(ctx context.Context, c *Call, args []string) error {
	fs := c.flags("")
	model := fs.String("model", filepath.Join("testdata", "k3-tiny"), "the model the trace was recorded on")
	trace := fs.String("trace", filepath.Join("testdata", "traces", "k3-tiny-france-256.jsonl"), "router traces (--trace output), comma-separated: replayed one after the other")
	caches := fs.String("cache", "8,32,64,128", "cache sizes in experts")
	halfLives := fs.String("half-life", "-1,16,64,256,1024", "heat half-lives in tokens (-1: cumulative counts)")
	asJSON := fs.Bool("json", false, "print the runs as JSON")
	if err := c.parse(fs, args); err != nil {
		return err
	}
	cs, bad, ok := parseInts(*caches, 0)
	if !ok {
		return fmt.Errorf("bench heat: --cache: %q is not a cache size", bad)
	}
	hs, bad, ok := parseInts(*halfLives, -1)
	if !ok {
		return fmt.Errorf("bench heat: --half-life: %q is not a half-life (tokens, or -1)", bad)
	}
	runs, err := bench.TraceHitRates(ctx, *model, strings.Split(*trace, ","), cs, hs)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(c.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(runs)
	}
	fmt.Fprintf(c.Stdout, "expert cache hit rate on %s (model %s)\n", *trace, *model)
	tw := tabwriter.NewWriter(c.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CACHE\tHALF-LIFE\tDEMANDED\tHITS\tHIT RATE")
	for _, r := range runs {
		hl := fmt.Sprint(r.HalfLife)
		if r.HalfLife < 0 {
			hl = "cumulative"
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%.3f\n", r.CacheExperts, hl, r.Demanded, r.Hits, r.HitRate)
	}
	return tw.Flush()
}
