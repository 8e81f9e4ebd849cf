package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/deltafin/deltafin/app"
	"github.com/deltafin/deltafin/drives"
)

// Drives is `deltafin drives add|list|remove|scrub`: expert drives, other
// disks holding copies of the hottest experts, read together with the
// mirror (package drives).
func Drives(ctx context.Context, c *Call) error {
	sub, args := "", c.Args
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	// The path may come before the flags: drives add PATH --share 50%.
	path := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		path, args = args[0], args[1:]
	}
	fs := c.flags("add PATH [--share N%|--all] | list | remove PATH | scrub [PATH]")
	model := fs.String("model", "", "model directory to copy from (default: the model deltafin setup installed)")
	share := fs.String("share", "", "share of the model's experts to copy, hottest first (drives add; e.g. 25%)")
	all := fs.Bool("all", false, "copy every expert (drives add)")
	force := fs.Bool("force", false, "allow a drive on the mirror's own device (drives add)")
	keep := fs.Bool("keep", false, "keep the copies on disk (drives remove)")
	probeMiB := fs.Int("probe-mib", 256, "size of the probe file that picks the drive's reads in flight (drives add)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if path == "" && fs.NArg() > 0 {
		path = fs.Arg(0)
	}
	if err := c.Config.Validate(); err != nil {
		return err
	}
	cfg := c.Config
	if sub == "add" || sub == "remove" || sub == "scrub" {
		// The drives' manifests and the drive list are the running app's
		// too: one writer per data directory.
		lock, err := app.LockDataDir(cfg.DataDir)
		if err != nil {
			if errors.Is(err, app.ErrRunning) {
				return fmt.Errorf("%w: use its menu's Expert drives… entry, or quit it first", err)
			}
			return err
		}
		defer lock.Close()
	}
	switch {
	case sub == "list":
		return listDrives(cfg, c.Stdout)
	case sub == "add" && path != "":
		frac, err := parseShare(*share, *all)
		if err != nil {
			fmt.Fprintln(fs.Output(), app.UserText(err))
			return errUsage
		}
		return addDrive(ctx, cfg, *model, app.DriveEntry{Path: path, Share: frac}, *force, int64(*probeMiB)<<20, c.Stdout)
	case sub == "remove" && path != "":
		e, err := app.RemoveExpertDrive(cfg, path)
		if err != nil {
			return err
		}
		if !*keep {
			if err := drives.Remove(e.Path); err != nil {
				return err
			}
		}
		fmt.Fprintf(c.Stdout, "removed %s\n", e.Path)
		return nil
	case sub == "scrub":
		return scrubDrives(ctx, cfg, *model, path, c.Stdout)
	}
	fs.Usage()
	return errUsage
}

// parseShare reads --share N% (or a fraction) and --all.
func parseShare(s string, all bool) (float64, error) {
	switch {
	case all && s != "":
		return 0, fmt.Errorf("give --share or --all, not both")
	case all:
		return 1, nil
	case s == "":
		return 0, fmt.Errorf("drives add needs --share N%% or --all")
	}
	pct := strings.HasSuffix(s, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err == nil && pct {
		v /= 100
	}
	if err != nil || !(v > 0 && v <= 1) {
		return 0, fmt.Errorf("--share %q: want a percentage above 0%% and at most 100%%", s)
	}
	return v, nil
}

func addDrive(ctx context.Context, cfg app.Config, model string, e app.DriveEntry, force bool, probe int64, out io.Writer) error {
	m, done, err := app.DriveMirror(ctx, cfg, model)
	if err != nil {
		return err
	}
	defer done()
	last := -1
	e, res, err := app.FillDrive(ctx, cfg, m, e, force, probe, app.DriveProgress{
		Probe: func(p drives.ProbeResult) {
			fmt.Fprintf(out, "%s: %d reads in flight, %.2f GB/s (probe)\n", e.Path, p.Readers, p.GBps)
		},
		Progress: func(done, total int, bytes int64) {
			if pct := 100 * done / max(total, 1); pct/10 != last/10 {
				last = pct
				fmt.Fprintf(out, "copied %d of %d experts (%.1f GB)\n", done, total, float64(bytes)/1e9)
			}
		},
	})
	if err != nil {
		return interrupted("drives add", err)
	}
	fmt.Fprintf(out, "%s holds %d of %d experts wanted (%d copied now, %.1f GB)\n", e.Path, res.Held, res.Wanted, res.Copied, float64(res.Bytes)/1e9)
	if res.Full {
		fmt.Fprintln(out, "stopped early: the drive is full (2 GB left free)")
	}
	return nil
}

func listDrives(cfg app.Config, out io.Writer) error {
	entries, err := app.ExpertDrives(cfg)
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		fmt.Fprintln(out, "no expert drives (deltafin drives add PATH --share N%)")
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PATH\tSHARE\tEXPERTS\tGB\tBAD\tREADERS\tGB/S")
	for _, e := range entries {
		in, err := drives.Stat(e.Path)
		if err != nil {
			fmt.Fprintf(tw, "%s\t%.0f%%\t%s\n", e.Path, 100*e.Share, app.UserText(err))
			continue
		}
		fmt.Fprintf(tw, "%s\t%.0f%%\t%d\t%.1f\t%d\t%d\t%.2f\n", e.Path, 100*e.Share, in.Experts, float64(in.Bytes)/1e9, in.Bad, in.Readers, in.GBps)
	}
	return tw.Flush()
}

func scrubDrives(ctx context.Context, cfg app.Config, model, path string, out io.Writer) error {
	entries, err := app.ExpertDrives(cfg)
	if err != nil {
		return err
	}
	m, done, err := app.DriveMirror(ctx, cfg, model)
	if err != nil {
		return err
	}
	defer done()
	for _, e := range entries {
		if abs, _ := filepath.Abs(path); path != "" && abs != e.Path {
			continue
		}
		d, err := drives.Open(e.Path, drives.Layout(m.Spans))
		if openErr := err; errors.Is(err, drives.ErrManifest) {
			// Its manifest is damaged: set it aside and copy the drive's
			// share again, every copy checksummed.
			aside, err := drives.SetAside(e.Path, time.Now())
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "%s: the manifest is damaged (%v); moved aside to %s, copying the drive's experts again\n", e.Path, openErr, aside)
			_, res, err := app.FillDrive(ctx, cfg, m, e, true, 16<<20, app.DriveProgress{})
			if err != nil {
				return interrupted("drives scrub", err)
			}
			fmt.Fprintf(out, "%s: manifest repaired, %d copies made again\n", e.Path, res.Copied)
			continue
		}
		if err != nil {
			return err
		}
		checked, repaired, err := d.Scrub(ctx, m)
		d.Close()
		if err != nil {
			return interrupted("drives scrub", err)
		}
		fmt.Fprintf(out, "%s: %d copies checked, %d repaired\n", e.Path, checked, repaired)
	}
	return nil
}
