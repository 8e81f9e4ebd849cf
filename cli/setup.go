package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/deltafin/deltafin/app"
	"github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/downloader"
	"github.com/deltafin/deltafin/internal/sysinfo"
)

// Setup is `deltafin setup`: download the model.
func Setup(ctx context.Context, c *Call) error {
	cfg := &c.Config
	fs := c.flags("")
	hubFlags(fs, cfg)
	stream := fs.Bool("stream", false, "download metadata and the spine; experts arrive on demand")
	full := fs.Bool("full", false, "download everything (about 1.7 TB for K3)")
	auto := fs.Bool("auto", false, "full if --keep-free GB stay free afterwards, else stream (the default)")
	dryRun := fs.Bool("dry-run", false, "print each mode's totals and what is present, download nothing")
	keepFree := keepFreeFlag(fs)
	repair := fs.Bool("repair", false, "re-verify everything present (hash complete files, fetch shard headers again) and fetch again what fails; keeps the install's mode unless one is given")
	drafter := fs.Bool("drafter", false, "download the drafter (--drafter-repo) that run, serve and the app draft with, instead of the model")
	fs.StringVar(&cfg.DrafterRepo, "drafter-repo", cfg.DrafterRepo, "the drafter's hub repository owner/name")
	fs.StringVar(&cfg.DrafterRevision, "drafter-revision", cfg.DrafterRevision, "the drafter's revision (commit, branch or tag)")
	if err := c.parse(fs, c.Args); err != nil {
		return err
	}
	if err := checkKeepFree(fs, *keepFree); err != nil {
		return err
	}
	if *drafter {
		if *stream || *full || *auto || *dryRun {
			fmt.Fprintln(fs.Output(), "--drafter installs the whole drafter: leave out --stream, --full, --auto and --dry-run")
			return errUsage
		}
		return setupDrafter(ctx, *cfg, SetupOptions{Repair: *repair, Headroom: headroomGB(*keepFree)}, c.Stdout)
	}
	opts := SetupOptions{Mode: downloader.Auto, DryRun: *dryRun, Repair: *repair, Headroom: headroomGB(*keepFree)}
	if opts.Repair && opts.DryRun {
		fmt.Fprintln(fs.Output(), "--repair writes; it cannot be a --dry-run")
		return errUsage
	}
	n := 0
	for _, m := range []struct {
		set  bool
		mode downloader.Mode
	}{{*stream, downloader.Stream}, {*full, downloader.Full}, {*auto, downloader.Auto}} {
		if m.set {
			opts.Mode = m.mode
			n++
		}
	}
	if n > 1 {
		fmt.Fprintln(fs.Output(), "choose one of --stream, --full and --auto")
		return errUsage
	}
	return setup(ctx, *cfg, opts, c.Stdout)
}

// FetchExperts is `deltafin fetch-experts`: fill in routed experts.
func FetchExperts(ctx context.Context, c *Call) error {
	cfg := &c.Config
	fs := c.flags("")
	hubFlags(fs, cfg)
	layers := fs.String("layers", "", "only the experts of these MoE layers, e.g. 1-40,45 (default: everything missing)")
	dryRun := fs.Bool("dry-run", false, "print what would be downloaded")
	keepFree := keepFreeFlag(fs)
	if err := c.parse(fs, c.Args); err != nil {
		return err
	}
	if err := checkKeepFree(fs, *keepFree); err != nil {
		return err
	}
	return fetchExperts(ctx, *cfg, FetchOptions{Layers: *layers, DryRun: *dryRun, Headroom: headroomGB(*keepFree)}, c.Stdout)
}

// keepFreeFlag is --keep-free GB: the free disk a download leaves; left
// out, it scales with the model (downloader.HeadroomFor).
func keepFreeFlag(fs *flag.FlagSet) *float64 {
	gb := math.NaN() // not given
	fs.Func("keep-free", "GB of disk to leave free after the download (0: none; default: a tenth of the model's full size, 1 to 100 GB)", func(s string) error {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("want a size in GB")
		}
		gb = v
		return nil
	})
	return &gb
}

// headroomGB turns --keep-free into bytes: left out (NaN from keepFreeFlag) 0,
// which scales with the model; 0 keeps one byte (none to speak of); a
// negative value given is refused by checkKeepFree.
func headroomGB(gb float64) int64 {
	if math.IsNaN(gb) {
		return 0
	}
	return max(1, int64(gb*1e9))
}

func checkKeepFree(fs *flag.FlagSet, gb float64) error {
	if gb < 0 {
		fmt.Fprintf(fs.Output(), "--keep-free %g: want a size in GB, 0 or more\n", gb)
		return errUsage
	}
	return nil
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return "" }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// Warm is `deltafin warm`: rank missing experts by use, fetch the top N.
func Warm(ctx context.Context, c *Call) error {
	cfg := &c.Config
	fs := c.flags("")
	hubFlags(fs, cfg)
	var opts WarmOptions
	fs.Var((*stringList)(&opts.Traces), "trace", "router trace file (repeatable; default: DATA_DIR/router_trace*.jsonl)")
	fs.StringVar(&opts.Heat, "heat", "", "heat histogram, JSON lines {layer, expert, heat} (default: DATA_DIR/expert_heat.jsonl if present)")
	fs.IntVar(&opts.Fetch, "fetch", 0, "download the top N missing experts (default: print the plan only)")
	fs.IntVar(&opts.Show, "show", 20, "lines of the ranking to print")
	if err := c.parse(fs, c.Args); err != nil {
		return err
	}
	return warm(ctx, *cfg, opts, c.Stdout)
}

// SetupOptions are the flags of deltafin setup.
type SetupOptions struct {
	Mode   downloader.Mode // Auto, Stream or Full
	DryRun bool
	// Repair re-verifies what is present and fetches again what fails;
	// with Mode Auto it keeps the install's mode.
	Repair bool
	// Headroom is the free space left after the install (0: 100 GB).
	Headroom int64
	// ChunkSize of transfers (0: 64 MiB); tests use small chunks.
	ChunkSize int64
}

// Setup plans and installs the model: it lists the repository, reads the
// shard headers, chooses the mode by free disk, downloads with progress bars
// on out, and verifies. With DryRun it only prints each mode's totals.
func setup(ctx context.Context, cfg app.Config, opts SetupOptions, out io.Writer) error {
	return interrupted("setup", setupModel(ctx, cfg, opts, out))
}

func setupModel(ctx context.Context, cfg app.Config, opts SetupOptions, out io.Writer) error {
	ui := newProgressUI(out)
	m, p, err := app.OpenPlan(ctx, cfg, downloader.Options{ChunkSize: opts.ChunkSize, Progress: ui.event, Repair: opts.Repair, ReadOnly: opts.DryRun})
	if err != nil {
		return err
	}
	defer m.Close()
	stream, err := m.Totals(p.Work(downloader.Stream))
	if err != nil {
		return err
	}
	full, err := m.Totals(p.Work(downloader.Full))
	if err != nil {
		return err
	}
	free, err := freeDisk(m.Dir())
	if err != nil {
		return err
	}
	headroom := app.KeptFree(opts.Headroom, full.Total)
	mode, chooseErr := downloader.Choose(opts.Mode, stream, full, int64(free), headroom)
	if opts.Repair && opts.Mode == downloader.Auto {
		// Keep the install's mode: full when every expert is there.
		mode, chooseErr = downloader.Stream, nil
		if full.Missing() == stream.Missing() {
			mode = downloader.Full
		}
	}
	if opts.DryRun {
		fmt.Fprintf(out, "%s@%s in %s\n", cfg.Repo, cfg.Revision, m.Dir())
		fmt.Fprintf(out, "%-8s %12s %12s %12s\n", "mode", "total", "present", "to download")
		for _, r := range []struct {
			name string
			t    downloader.Totals
		}{{"stream", stream}, {"full", full}} {
			fmt.Fprintf(out, "%-8s %12s %12s %12s\n", r.name, downloader.FormatBytes(r.t.Total), downloader.FormatBytes(r.t.Present), downloader.FormatBytes(r.t.Missing()))
		}
		fmt.Fprintf(out, "free disk: %s (%s kept free)\n", downloader.FormatBytes(int64(free)), downloader.FormatBytes(headroom))
		if chooseErr != nil {
			fmt.Fprintf(out, "--%s would refuse: %s\n", opts.Mode, app.UserText(chooseErr))
		} else {
			fmt.Fprintf(out, "--%s would install: %s\n", opts.Mode, mode)
		}
		return nil
	}
	if chooseErr != nil {
		return chooseErr
	}
	t := stream
	if mode == downloader.Full {
		t = full
	}
	fmt.Fprintf(out, "%s install of %s@%s in %s: %s to download, %s present\n", mode, cfg.Repo, cfg.Revision, m.Dir(),
		downloader.FormatBytes(t.Missing()), downloader.FormatBytes(t.Present))
	err = m.Fetch(ctx, p, p.Work(mode))
	ui.finish(err)
	if err != nil {
		return err
	}
	if err := printVerified(m, p, mode, out); err != nil {
		return err
	}
	return printStreamStatus(m, p, out)
}

// setupDrafter installs the drafter whole, verified, and records it for
// run, serve and the app (app.InstallDrafter).
func setupDrafter(ctx context.Context, cfg app.Config, opts SetupOptions, out io.Writer) error {
	if opts.Headroom > 0 {
		cfg.KeepFreeGB = float64(opts.Headroom) / 1e9
	}
	ui := newProgressUI(out)
	fmt.Fprintf(out, "drafter %s@%s\n", cfg.DrafterRepo, cfg.DrafterRevision)
	dir, err := app.InstallDrafter(ctx, cfg, downloader.Options{ChunkSize: opts.ChunkSize, Progress: ui.event, Repair: opts.Repair})
	ui.finish(err)
	if err != nil {
		return interrupted("setup --drafter", err)
	}
	fmt.Fprintf(out, "drafter installed and verified in %s; run, serve and the app draft with it (DELTAFIN_DRAFTER=off turns it off)\n", dir)
	return nil
}

// freeDisk is the free space of the filesystem that holds (or will hold)
// dir: a dry run creates nothing, so dir may not exist yet.
func freeDisk(dir string) (uint64, error) {
	for {
		if _, err := os.Stat(dir); err == nil || filepath.Dir(dir) == dir {
			return sysinfo.FreeDisk(dir)
		}
		dir = filepath.Dir(dir)
	}
}

// printVerified says what the install holds and, honestly, how much of it
// is verified: "verified" only for bytes whose file matched the hub's
// digest or, in a shard held in part, whose range matched the shard's Xet
// hash; a shard the hub keeps without Xet is verified once it is complete.
func printVerified(m *downloader.Mirror, p *downloader.Plan, mode downloader.Mode, out io.Writer) error {
	all, err := m.Coverage(p.Work(mode))
	if err != nil {
		return err
	}
	full, err := m.Totals(p.Work(downloader.Full))
	if err != nil {
		return err
	}
	switch {
	case all.AllVerified() && full.Missing() == 0:
		fmt.Fprintf(out, "%s install complete and verified (every file matches the hub's sha256)\n", mode)
	case all.AllVerified():
		fmt.Fprintf(out, "%s install complete and verified (complete files match the hub's sha256, the parts of shards held in part their Xet hashes)\n", mode)
	default:
		fmt.Fprintf(out, "%s install complete, %s: some bytes of shards held in part could not be checked against a Xet hash (the hub has none for them); they are verified against its sha256 when complete (deltafin fetch-experts)\n", mode, all)
	}
	return nil
}

// printStreamStatus says how much of the expert pool is local and what
// completing the install costs (nothing when it is complete).
func printStreamStatus(m *downloader.Mirror, p *downloader.Plan, out io.Writer) error {
	cached, total, err := m.ExpertsCached(p)
	if err != nil || total == 0 || cached == total {
		return err
	}
	full, err := m.Totals(p.Work(downloader.Full))
	if err != nil {
		return err
	}
	spine, err := m.Coverage(p.SpineWork())
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "experts cached: %.1f%% (%d of %d); the rest are fetched on demand; completing the install (deltafin fetch-experts) downloads %s\n",
		100*float64(cached)/float64(total), cached, total, downloader.FormatBytes(full.Missing()))
	fmt.Fprintf(out, "spine: %s\n", spine)
	return nil
}

// FetchOptions are the flags of deltafin fetch-experts.
type FetchOptions struct {
	Layers    string // e.g. "1-40,45"; "": every missing byte of the model
	DryRun    bool
	Headroom  int64 // free space kept (0: 100 GB)
	ChunkSize int64
}

// FetchExperts fills in routed experts (stream to full): every missing byte
// of the model, or the experts of the selected layers. Shards that become
// complete are verified like a full download.
func fetchExperts(ctx context.Context, cfg app.Config, opts FetchOptions, out io.Writer) error {
	return interrupted("fetch-experts", fetchMissing(ctx, cfg, opts, out))
}

func fetchMissing(ctx context.Context, cfg app.Config, opts FetchOptions, out io.Writer) error {
	layers, dryRun := opts.Layers, opts.DryRun
	ui := newProgressUI(out)
	m, p, err := app.OpenPlan(ctx, cfg, downloader.Options{ChunkSize: opts.ChunkSize, Progress: ui.event, ReadOnly: dryRun})
	if err != nil {
		return err
	}
	defer m.Close()
	work := p.Work(downloader.Full)
	what := "every missing byte of the model"
	if layers != "" {
		set, err := downloader.ParseLayers(layers)
		if err != nil {
			return err
		}
		work = p.ExpertWork(set)
		if len(work) == 0 {
			return fmt.Errorf("--layers %s selects no MoE layer of %s", layers, cfg.Repo)
		}
		what = fmt.Sprintf("the experts of layers %s (%d experts)", layers, len(work))
	}
	t, err := m.Totals(work)
	if err != nil {
		return err
	}
	whole, err := m.Totals(p.Work(downloader.Full))
	if err != nil {
		return err
	}
	headroom := app.KeptFree(opts.Headroom, whole.Total)
	free, err := freeDisk(m.Dir())
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "fetch-experts: %s: %s to download, %s present, %s free\n", what,
		downloader.FormatBytes(t.Missing()), downloader.FormatBytes(t.Present), downloader.FormatBytes(int64(free)))
	if dryRun {
		return nil
	}
	if _, err := downloader.Choose(downloader.Full, t, t, int64(free), headroom); err != nil {
		return err
	}
	err = m.Fetch(ctx, p, work)
	ui.finish(err)
	if err != nil {
		return err
	}
	return printStreamStatus(m, p, out)
}

// interrupted explains a Ctrl-C: nothing is lost, running again continues.
func interrupted(cmd string, err error) error {
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s interrupted; everything downloaded is kept but the last few MiB of each transfer in flight: run deltafin %s again to continue (%w)", cmd, cmd, err)
	}
	return err
}

// WarmOptions are the flags of deltafin warm.
type WarmOptions struct {
	Traces    []string // router traces; none: DataDir/router_trace*.jsonl
	Heat      string   // heat histogram; "": DataDir/expert_heat.jsonl if present
	Fetch     int      // download the top N; 0 only prints the plan
	Show      int      // lines of the plan to print (0: 20)
	ChunkSize int64
}

// Warm ranks missing experts by how often router traces (and the heat
// histogram) saw them, prints the top of the ranking and, with Fetch,
// downloads the top N.
func warm(ctx context.Context, cfg app.Config, opts WarmOptions, out io.Writer) error {
	return interrupted("warm", warmExperts(ctx, cfg, opts, out))
}

func warmExperts(ctx context.Context, cfg app.Config, opts WarmOptions, out io.Writer) error {
	traces := opts.Traces
	if len(traces) == 0 {
		found, _ := filepath.Glob(filepath.Join(cfg.DataDir, "router_trace*.jsonl"))
		sort.Strings(found)
		traces = found
	}
	heat := opts.Heat
	if heat == "" {
		if _, err := os.Stat(filepath.Join(cfg.DataDir, "expert_heat.jsonl")); err == nil {
			heat = filepath.Join(cfg.DataDir, "expert_heat.jsonl")
		}
	}
	if len(traces) == 0 && heat == "" {
		return fmt.Errorf("warm has nothing to rank: pass --trace FILE (written by deltafin run --trace) or keep traces as %s", filepath.Join(cfg.DataDir, "router_trace*.jsonl"))
	}
	counts := map[checkpoint.ExpertID]float64{}
	routes := 0
	for _, name := range traces {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("trace: %w", err)
		}
		n, err := downloader.ReadTrace(f, name, counts)
		f.Close()
		if err != nil {
			return err
		}
		routes += n
	}
	if heat != "" {
		f, err := os.Open(heat)
		if err != nil {
			return fmt.Errorf("heat histogram: %w", err)
		}
		err = downloader.ReadHeat(f, heat, counts)
		f.Close()
		if err != nil {
			return err
		}
	}
	ui := newProgressUI(out)
	m, p, err := app.OpenPlan(ctx, cfg, downloader.Options{ChunkSize: opts.ChunkSize, Progress: ui.event})
	if err != nil {
		return err
	}
	defer m.Close()
	ranked, unknown, err := m.RankMissing(p, counts)
	if err != nil {
		return err
	}
	var missing int64
	for _, c := range ranked {
		missing += c.Len()
	}
	fmt.Fprintf(out, "routes=%d unique=%d missing=%d (%s)", routes, len(counts), len(ranked), downloader.FormatBytes(missing))
	if unknown > 0 {
		fmt.Fprintf(out, " unknown=%d (experts not in %s)", unknown, cfg.Repo)
	}
	fmt.Fprintln(out)
	show := opts.Show
	if show <= 0 {
		show = 20
	}
	for _, c := range ranked[:min(show, len(ranked))] {
		fmt.Fprintf(out, "  L%d-E%d: %g\n", c.ExpertID.Layer, c.ExpertID.Expert, c.Score)
	}
	if opts.Fetch <= 0 {
		if len(ranked) > 0 {
			fmt.Fprintf(out, "read-only: deltafin warm --fetch N downloads the top N\n")
		}
		return nil
	}
	top := ranked[:min(opts.Fetch, len(ranked))]
	work := make([]downloader.Work, len(top))
	for i, c := range top {
		work[i] = downloader.Work{File: c.File, Range: c.Range}
	}
	err = m.Fetch(ctx, p, work)
	ui.finish(err)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "warmed %d experts\n", len(top))
	return printStreamStatus(m, p, out)
}
