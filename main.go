// Command deltafin runs Kimi K3 on one machine by streaming its routed
// experts from disk. With no arguments it starts the menu-bar app.
//
// This file is the command table: each command's flags and body are in
// package cli, one file per command.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/deltafin/deltafin/app"
	"github.com/deltafin/deltafin/cli"
)

// commands is every subcommand, in the order `deltafin help` lists them.
func commands() []cli.Command {
	return []cli.Command{
		{Name: "app", Summary: "start the menu-bar app (the default with no arguments)", Run: cli.App(demoModel)},
		{Name: "serve", Summary: "serve the OpenAI-compatible API without the menu bar", Run: cli.Serve(demoModel)},
		{Name: "run", Summary: "generate from a prompt or token ids on the command line", Run: cli.Run(demoModel)},
		{Name: "setup", Summary: "download the model (stream, full or auto)", Run: cli.Setup},
		{Name: "fetch-experts", Summary: "download missing routed experts (stream to full)", Run: cli.FetchExperts},
		{Name: "warm", Summary: "rank missing experts by use and optionally fetch them", Run: cli.Warm},
		{Name: "drives", Summary: "add, list, scrub or remove expert drives (copies of the hottest experts on other disks)", Run: cli.Drives},
		{Name: "convert-spine-int8", Summary: "write the opt-in, non-exact int8 copy of the spine (--spine int8)", Run: cli.ConvertSpineInt8},
		{Name: "bench", Summary: "measure kernels, streaming and prefill against this machine's limits", Run: cli.Bench},
		{Name: "doctor", Summary: "report this machine, the data directory and the compute backends", Run: cli.Doctor},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv app.Getenv) int {
	return cli.Main(ctx, commands(), args, stdout, stderr, getenv)
}
