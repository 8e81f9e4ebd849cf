package main

import (
	"context"
	"os"

	"github.com/deltafin/deltafin/app"
)

// runConvertSpineInt8 is `deltafin convert-spine-int8 --model DIR [--out DIR]`.
func runConvertSpineInt8(ctx context.Context, cfg app.Config, args []string) error {
	fs := newFlags("convert-spine-int8", "", &cfg)
	var model, out string
	fs.StringVar(&model, "model", "", "model directory (config.json and safetensors shards)")
	fs.StringVar(&out, "out", "", "output directory (default: next to the model, <model>.spine-int8, where --spine int8 looks)")
	if err := parse(fs, args, &cfg); err != nil {
		return err
	}
	return app.ConvertSpineInt8(ctx, cfg, model, out, os.Stderr)
}
