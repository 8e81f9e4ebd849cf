package main

import (
	"context"
	"os"

	"github.com/deltafin/deltafin/app"
)

func runRun(ctx context.Context, cfg app.Config, args []string) error {
	fs := newFlags("run", "", &cfg)
	addStreamFlags(fs, &cfg)
	r := &cfg.Run
	fs.StringVar(&r.Model, "model", r.Model, "model directory (config.json and safetensors shards)")
	ids := fs.String("ids", "", "prompt as comma-separated token ids, e.g. 1,2,3")
	fs.StringVar(&r.Prompt, "prompt", r.Prompt, "prompt text, tokenized with the model directory's tokenizer (no BOS)")
	fs.BoolVar(&r.Chat, "chat", r.Chat, "send --prompt as a chat turn and stop at the end-of-turn token")
	thinking := fs.Bool("thinking", !r.NoThinking, "with --chat: think before answering (--thinking=false answers directly)")
	fs.StringVar(&r.Effort, "effort", r.Effort, "with --chat and thinking: thinking effort low, high or max (empty: max)")
	fs.IntVar(&r.MaxNew, "max-new", r.MaxNew, "tokens to generate (a raw completion always runs to this)")
	fs.BoolVar(&r.JSON, "json", r.JSON, `print one JSON object: {"prompt_ids","ids","text","reasoning","content","stats"}`)
	fs.StringVar(&r.LogitsOut, "logits-out", r.LogitsOut, "write float32 little-endian logits rows (prompt positions, then each step) to this file")
	fs.DurationVar(&cfg.NotifyAfter, "notify-after", cfg.NotifyAfter, "notify on the desktop when the answer takes longer than this (0: never)")
	if err := parse(fs, args, &cfg); err != nil {
		return err
	}
	r.NoThinking = !*thinking
	if *ids != "" {
		var err error
		if r.IDs, err = app.ParseIDs(*ids); err != nil {
			return err
		}
	}
	if cfg.NotifyAfter > 0 {
		r.Notify = app.NewNotifier("Deltafin")
	}
	return app.Run(ctx, cfg, os.Stdout, os.Stderr)
}
