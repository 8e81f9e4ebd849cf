package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/deltafin/deltafin/app"
	"github.com/deltafin/deltafin/engine"
)

// ConvertSpineInt8 is `deltafin convert-spine-int8 --model DIR [--out DIR]`.
func ConvertSpineInt8(ctx context.Context, c *Call) error {
	cfg := &c.Config
	fs := c.flags("")
	var model, out string
	fs.StringVar(&model, "model", "", "model directory (config.json and safetensors shards)")
	fs.StringVar(&out, "out", "", "output directory (default: next to the model, <model>.spine-int8, where --spine int8 looks)")
	if err := c.parse(fs, c.Args); err != nil {
		return err
	}
	return convertSpineInt8(ctx, *cfg, model, out, c.Stderr)
}

// ConvertSpineInt8 writes the int8 copy of model's spine (`deltafin
// convert-spine-int8`) into out, by default engine.SpineInt8Dir(model),
// where --spine int8 reads it. A rerun resumes an interrupted conversion.
func convertSpineInt8(ctx context.Context, cfg app.Config, model, out string, log io.Writer) error {
	if model == "" {
		return fmt.Errorf("convert-spine-int8 needs --model DIR")
	}
	if out == "" {
		out = engine.SpineInt8Dir(model)
	}
	shown := -1
	err := engine.ConvertSpineInt8(ctx, model, out, func(done, total int64) {
		if pct := int(100 * done / max(total, 1)); pct/10 != shown/10 {
			shown = pct
			fmt.Fprintf(log, "convert-spine-int8: %d%% of %.2f GB\n", pct, float64(total)/1e9)
		}
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "convert-spine-int8: done: %s (use with --spine int8; approximate, not the exact K3 output)\n", out)
	return nil
}
