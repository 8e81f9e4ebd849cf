package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/deltafin/deltafin/app"
)

// A Command is one subcommand of deltafin: main.go lists them.
type Command struct {
	Name    string
	Summary string
	// Run parses c.Args with the command's own flags, then does the work.
	Run func(ctx context.Context, c *Call) error
}

// A Call is one invocation of a Command: the configuration from the
// environment (flags are parsed into it), the arguments after the command's
// name, and where its output goes.
type Call struct {
	Command
	Config         app.Config
	Args           []string
	Stdout, Stderr io.Writer
}

// errUsage marks a command-line mistake: exit status 2, the flag package has
// already printed why.
var errUsage = errors.New("usage")

// Main runs the command named by args[0] ("app" when args is empty) and
// returns the process's exit status: 0, 1 for a failure (printed to stderr),
// 2 for a command-line mistake.
func Main(ctx context.Context, commands []Command, args []string, stdout, stderr io.Writer, getenv app.Getenv) int {
	name := "app"
	if len(args) > 0 && !isFlag(args[0]) {
		name, args = args[0], args[1:]
	} else if len(args) > 0 && !isTopLevel(args[0]) {
		// Flags without a command are the app's: deltafin --port 9000
		// and deltafin --data-dir X start it, as plain deltafin does.
		name = "app"
	} else if len(args) > 0 {
		name, args = args[0], args[1:]
	}
	switch name {
	case "-h", "-help", "--help", "help":
		usage(stdout, commands)
		return 0
	case "-version", "--version", "version":
		fmt.Fprintln(stdout, app.VersionLine())
		return 0
	}
	for _, c := range commands {
		if c.Name != name {
			continue
		}
		err := c.Run(ctx, &Call{Command: c, Config: app.DefaultConfig(getenv), Args: args, Stdout: stdout, Stderr: stderr})
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.Is(err, errUsage):
			return 2
		}
		fmt.Fprintf(stderr, "deltafin: %s\n", app.UserText(err))
		return 1
	}
	fmt.Fprintf(stderr, "deltafin: unknown command %q\n\n", name)
	usage(stderr, commands)
	return 2
}

// isFlag says whether arg is a flag rather than a command name.
func isFlag(arg string) bool { return strings.HasPrefix(arg, "-") }

// isTopLevel says whether arg is one of deltafin's own flags (help and
// version), not the app's.
func isTopLevel(arg string) bool {
	switch arg {
	case "-h", "-help", "--help", "-version", "--version":
		return true
	}
	return false
}

func usage(w io.Writer, commands []Command) {
	fmt.Fprintf(w, "Usage: deltafin [command] [flags]\n\nCommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-19s %s\n", c.Name, c.Summary)
	}
	fmt.Fprintf(w, "\nRun 'deltafin COMMAND --help' for a command's flags, 'deltafin --version' for the version.\n")
}

// flags returns a FlagSet for the call with the flags every command shares
// bound into c.Config; args names the positional arguments in the usage
// line. Call c.parse after adding the command's own flags.
func (c *Call) flags(args string) *flag.FlagSet {
	fs := flag.NewFlagSet("deltafin "+c.Name, flag.ContinueOnError)
	fs.SetOutput(c.Stderr)
	fs.StringVar(&c.Config.DataDir, "data-dir", c.Config.DataDir, "data directory (also DELTAFIN_HOME)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: deltafin %s [flags] %s\n\n%s.\n\nFlags:\n", c.Name, args, c.Summary)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses args and validates the shared configuration.
func (c *Call) parse(fs *flag.FlagSet, args []string) error {
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
	return c.Config.Validate()
}

// addRAMFlag binds --ram-gb, shared by the commands that load a model.
func addRAMFlag(fs *flag.FlagSet, cfg *app.Config) {
	fs.Float64Var(&cfg.RAMGB, "ram-gb", cfg.RAMGB, "the RAM Deltafin may take, in GB, all of it (weights, expert cache, working set; nothing is reserved from it): set it to the memory really left for Deltafin (default: what is available now, less a headroom of an eighth for the page cache)")
}

// addModelFlags binds the flags of the commands that generate (run, serve):
// --ram-gb, --trace, --spine and --drafter.
func addModelFlags(fs *flag.FlagSet, cfg *app.Config) {
	addRAMFlag(fs, cfg)
	fs.StringVar(&cfg.Trace, "trace", cfg.Trace, "write the router's expert choices to this file (JSON lines)")
	fs.StringVar(&cfg.Spine, "spine", cfg.Spine, "spine weights: bf16 (exact) or int8 (the convert-spine-int8 copy: half the bytes, NOT exact)")
	fs.StringVar(&cfg.Drafter, "drafter", cfg.Drafter, "draft with: auto (the drafter setup --drafter installed, when it fits the model), off, or a drafter directory; the tokens are the model's either way")
	fs.StringVar(&cfg.Draft, "draft", cfg.Draft, "drafting, verified exactly (the tokens never change): ngram (default), off, or oracle:R (run only: the target's own answer, decoded first, each token wrong with probability 1-R)")
	addUnverifiedFlag(fs, cfg)
}

// addUnverifiedFlag binds --allow-unverified (run, serve, app).
func addUnverifiedFlag(fs *flag.FlagSet, cfg *app.Config) {
	fs.BoolVar(&cfg.AllowUnverified, "allow-unverified", cfg.AllowUnverified, "use bytes of the install that could not be verified against the hub (default: refuse them; deltafin fetch-experts completes and verifies the files)")
}

// hubFlags binds the model-source flags shared by setup, fetch-experts and warm.
func hubFlags(fs *flag.FlagSet, cfg *app.Config) {
	fs.StringVar(&cfg.Repo, "repo", cfg.Repo, "hub repository owner/name")
	fs.StringVar(&cfg.Revision, "revision", cfg.Revision, "revision (commit, branch or tag); a commit pins the content")
	fs.IntVar(&cfg.Jobs, "jobs", cfg.Jobs, "parallel range requests")
}

func itoa(n int) string { return strconv.Itoa(n) }

// parsePort parses a --port value into p.
func parsePort(v string, p *int) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 65535 {
		return errBadPort
	}
	*p = n
	return nil
}
