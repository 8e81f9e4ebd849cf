// Command deltafin runs Kimi K3 on one machine by streaming its routed
// experts from disk. With no arguments it starts the menu-bar app.
//
// This package only parses flags: each cmd_*.go file turns one subcommand's
// flags into an app.Config and calls into package app.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/deltafin/deltafin/app"
)

// A command is one subcommand: its flags are parsed by run itself.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, cfg app.Config, args []string) error
}

// commands is filled in init because the commands' flag usage refers back to
// this table.
var commands []command

func init() {
	commands = []command{
		{"app", "start the menu-bar app (the default with no arguments)", runApp},
		{"serve", "serve the OpenAI-compatible API without the menu bar", runServe},
		{"run", "generate from a prompt or token ids on the command line", runRun},
		{"setup", "download the model (stream, full or auto)", runSetup},
		{"fetch-experts", "download missing routed experts (stream to full)", runFetchExperts},
		{"warm", "rank missing experts by use and optionally fetch them", runWarm},
		{"convert-spine-int8", "write the opt-in, non-exact int8 copy of the spine (--spine int8)", runConvertSpineInt8},
		{"bench", "measure kernels and streaming against this machine's limits", runBench},
		{"doctor", "report this machine, the data directory and the compute backends", runDoctor},
	}
}

// errUsage marks a command-line mistake: exit status 2, the flag package has
// already printed why.
var errUsage = errors.New("usage")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv app.Getenv) int {
	name := "app"
	if len(args) > 0 {
		name, args = args[0], args[1:]
	}
	switch name {
	case "-h", "-help", "--help", "help":
		usage(stdout)
		return 0
	}
	for _, c := range commands {
		if c.name != name {
			continue
		}
		err := c.run(ctx, app.DefaultConfig(getenv), args)
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.Is(err, errUsage):
			return 2
		}
		fmt.Fprintf(stderr, "deltafin: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "deltafin: unknown command %q\n\n", name)
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "Usage: deltafin [command] [flags]\n\nCommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-19s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nRun 'deltafin COMMAND --help' for a command's flags.\n")
}

// newFlags returns a FlagSet for a subcommand with the flags every command
// shares bound into cfg. Call parse after adding the command's own flags.
func newFlags(name, args string, cfg *app.Config) *flag.FlagSet {
	fs := flag.NewFlagSet("deltafin "+name, flag.ContinueOnError)
	fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "data directory (also DELTAFIN_HOME)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: deltafin %s [flags] %s\n\n", name, args)
		for _, c := range commands {
			if c.name == name {
				fmt.Fprintf(fs.Output(), "%s.\n\nFlags:\n", c.summary)
			}
		}
		fs.PrintDefaults()
	}
	return fs
}

// parse parses args and validates the shared configuration.
func parse(fs *flag.FlagSet, args []string, cfg *app.Config) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return errUsage
	}
	return cfg.Validate()
}
