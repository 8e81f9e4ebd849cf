package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/deltafin/deltafin/app"
	"github.com/deltafin/deltafin/bench"
)

// benchPrefillCmd is `deltafin bench prefill`.
func benchPrefillCmd(ctx context.Context, c *Call, args []string) error {
	cfg := &c.Config
	fs := c.flags("prefill --model DIR")
	addRAMFlag(fs, cfg)
	var o BenchPrefillOptions
	fs.StringVar(&o.Model, "model", "", "model directory to prefill through (required)")
	tokens := fs.String("tokens", "1024,4096,16384", "prompt lengths, comma-separated; each is a synthetic prompt prefilled in a fresh session")
	fs.BoolVar(&o.JSON, "json", false, "print the report as JSON")
	if err := c.parse(fs, args); err != nil {
		return err
	}
	var err error
	if o.Prefill.Tokens, err = parseLengths(*tokens); err != nil {
		fmt.Fprintln(fs.Output(), app.UserText(err))
		fs.Usage()
		return errUsage
	}
	if o.Model == "" {
		fmt.Fprintln(fs.Output(), "deltafin bench prefill needs --model DIR")
		fs.Usage()
		return errUsage
	}
	return benchPrefill(ctx, *cfg, c.Stdout, c.Stderr, o)
}

// BenchPrefillOptions are `deltafin bench prefill`'s flags.
type BenchPrefillOptions struct {
	Model string // the model directory
	JSON  bool
	// Prefill holds the prompt lengths (--tokens) and, for tests, a
	// shorter FMA peak time.
	Prefill bench.PrefillOptions
}

// errLengths is parseLengths' error.
var errLengths = errors.New("--tokens wants positive lengths separated by commas, e.g. 1024,4096")

// parseLengths reads "1024,4096,16384".
func parseLengths(s string) ([]int, error) {
	out, _, ok := parseInts(s, 1)
	if !ok {
		return nil, fmt.Errorf("%w: %q", errLengths, s)
	}
	return out, nil
}

// benchPrefill opens the model as `deltafin run` does (app.OpenModel) and
// prints bench.Prefill's report as a table or as JSON.
func benchPrefill(ctx context.Context, cfg app.Config, w, stderr io.Writer, o BenchPrefillOptions) error {
	// A prompt's pass drafts nothing: the drafter's RAM would only shrink
	// the plan being measured.
	cfg.Drafter = "off"
	logger := app.NewLogger(cfg, stderr)
	defer logger.Close()
	m, err := app.OpenModel(ctx, cfg, app.ModelRef{Dir: o.Model, Log: logger.Logger})
	if err != nil {
		return err
	}
	defer m.Close()
	rep, err := bench.Prefill(ctx, m.Model, o.Prefill)
	if err != nil {
		return fmt.Errorf("bench prefill: %w", err)
	}
	if o.JSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	gpuPeak := ""
	if rep.GPUPeakGFLOPS > 0 {
		gpuPeak = fmt.Sprintf("; GPU fp32 FMA peak %.1f GFLOP/s", rep.GPUPeakGFLOPS)
	}
	fmt.Fprintf(w, "model %s, backend %s; fp32 FMA peak %.1f GFLOP/s with %d threads%s\n\n", rep.Model, rep.Backend, rep.FMAPeakGFLOPS, rep.Threads, gpuPeak)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "tokens\tseconds\ttokens/s\tGFLOP/s\tratio to FMA peak\tratio to GPU peak\t")
	for _, l := range rep.Lengths {
		fmt.Fprintf(tw, "%d\t%.3f\t%.1f\t%.2f\t%.4f\t%.4f\t\n", l.Tokens, l.Seconds, l.TokensPerS, l.GFLOPS, l.FLOPRatio, l.GPUFLOPRatio)
	}
	return tw.Flush()
}
