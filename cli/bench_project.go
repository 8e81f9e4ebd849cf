package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/deltafin/deltafin/app"
	"github.com/deltafin/deltafin/bench"
	"github.com/deltafin/deltafin/drives"
	"github.com/deltafin/deltafin/internal/sysinfo"
)

// benchProjectCmd is `deltafin bench project`: the full K3's RAM plan,
// bytes from disk and projected s/token on a machine, each term shown
// (bench.ProjectK3); --table prints it for the Macs of bench.Macs.
func benchProjectCmd(ctx context.Context, c *Call, args []string) error {
	cfg := &c.Config
	fs := c.flags("")
	addRAMFlag(fs, cfg)
	fs.StringVar(&cfg.Spine, "spine", cfg.Spine, "spine weights: bf16 (exact) or int8 (half the bytes, NOT exact)")
	var gbps gbpsList
	fs.Var(&gbps, "drive-gbps", "each drive's read bandwidth, the mirror's first, e.g. 6.6,6.6 (default: a 256 MiB probe of the data directory's disk)")
	compute := fs.String("compute", "", "compute rates measured elsewhere: a JSON file {source, matvec_bf16_gb_per_s, matvec_int8_gb_per_s, expert_ffn_gb_per_s} or bench kernels --json output (default: measured here)")
	table := fs.Bool("table", false, "print the projection table for the Macs (both spines) instead")
	asJSON := fs.Bool("json", false, "print the projection as JSON")
	var d bench.DraftOptions
	fs.Float64Var(&d.Accept, "draft-accept", 0, "also project drafting at this per-draft acceptance (0 to 1; e.g. bench slice --draft's or a drafter's measured rate)")
	fs.IntVar(&d.T, "draft-t", 0, "positions per verify pass with --draft-accept (0: the best, up to 8)")
	fs.Float64Var(&d.Growth, "draft-growth", 0, "share of a further position's experts not already in the pass's union (0: K3's 0.69)")
	if err := c.parse(fs, args); err != nil {
		return err
	}
	var draft *bench.DraftOptions
	if d.Accept > 0 || d.T > 0 {
		if _, err := bench.ProjectDraft(bench.Projection{DriveGBps: []float64{1}}, d); err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		draft = &d
	}
	rates, err := computeRates(ctx, *cfg, *compute)
	if err != nil {
		return err
	}
	if *table {
		if err := projectTable(c.Stdout, rates); err != nil || draft == nil {
			return err
		}
		return draftTable(c.Stdout, rates, *draft)
	}
	ram := cfg.RAMGB * 1e9
	if ram <= 0 {
		mem, err := sysinfo.ReadMemory()
		if err != nil {
			return err
		}
		ram = float64(mem.Total)
	}
	if len(gbps) == 0 {
		bw, err := probeDataDisk(ctx, cfg.DataDir)
		if err != nil {
			return err
		}
		gbps = gbpsList{bw}
	}
	p, err := bench.ProjectK3(bench.ProjectOptions{RAM: int64(ram), Int8: cfg.Spine == "int8", DriveGBps: gbps, Compute: rates})
	if err != nil {
		return err
	}
	var dp *bench.DraftProjection
	if draft != nil {
		q, err := bench.ProjectDraft(p, *draft)
		if err != nil {
			return err
		}
		dp = &q
	}
	if *asJSON {
		enc := json.NewEncoder(c.Stdout)
		enc.SetIndent("", "  ")
		if dp != nil {
			return enc.Encode(struct {
				bench.Projection
				Draft *bench.DraftProjection `json:"draft"`
			}{p, dp})
		}
		return enc.Encode(p)
	}
	printProjection(c.Stdout, p)
	if dp != nil {
		printDraft(c.Stdout, p, *dp)
	}
	return nil
}

func printDraft(out io.Writer, p bench.Projection, q bench.DraftProjection) {
	fmt.Fprintf(out, "drafting at acceptance %.2f, union growth %.2f: T = %d positions per pass, %.2f tokens per pass\n", q.Accept, q.Growth, q.T, q.TokensPerPass)
	fmt.Fprintf(out, "  per pass: disk %.2f GB, %.2f s; compute %.2f s (%d × %.2f s)\n", q.DiskBytes/1e9, q.DiskSeconds, q.Compute, q.T, p.ComputeSeconds())
	fmt.Fprintf(out, "  projected: %.2f s/token (%.2f× the plain %.2f), %.2f s/token serial\n", q.Overlapped, q.Speedup, p.Overlapped, q.Serial)
}

// draftTable prints the Macs' projections with drafting (BF16 spine), the
// 64 GB M1 Max beside the original Deltafin's measured figures.
func draftTable(out io.Writer, rates bench.ComputeRates, d bench.DraftOptions) error {
	fmt.Fprintf(out, "\nDrafting at acceptance %.2f (BF16 spine; T = positions per verify pass):\n\n", d.Accept)
	fmt.Fprintln(out, "| machine | plain s/token | T | tokens/pass | drafted s/token | speedup | measured (original Deltafin) |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|---|")
	for _, m := range bench.Macs {
		p, err := bench.ProjectK3(bench.ProjectOptions{RAM: int64(m.RAMGB * 1e9), DriveGBps: m.DriveGBps, Compute: rates})
		if err != nil {
			return err
		}
		q, err := bench.ProjectDraft(p, d)
		if err != nil {
			return err
		}
		measured := "—"
		if m.Name == "M1 Max 64 GB" {
			o := bench.OriginalM1Max
			measured = fmt.Sprintf("%.2f → %.2f s/token (%.2f×, EAGLE-3.1)", o[0], o[1], o[0]/o[1])
		}
		fmt.Fprintf(out, "| %s | %.2f | %d | %.2f | **%.2f** | %.2f× | %s |\n", m.Name, p.Overlapped, q.T, q.TokensPerPass, q.Overlapped, q.Speedup, measured)
	}
	return nil
}

func computeRates(ctx context.Context, cfg app.Config, file string) (bench.ComputeRates, error) {
	if file != "" {
		return bench.LoadComputeRates(file)
	}
	return bench.MeasureComputeRates(ctx, cfg.Kernels)
}

// probeDataDisk measures the data directory's disk with a drive probe in
// a temporary directory.
func probeDataDisk(ctx context.Context, dataDir string) (float64, error) {
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return 0, err
	}
	tmp, err := os.MkdirTemp(dataDir, "probe-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)
	d, err := drives.Open(tmp, "")
	if err != nil {
		return 0, err
	}
	defer d.Close()
	r, err := d.Probe(ctx, 256<<20)
	return r.GBps, err
}

func printProjection(out io.Writer, p bench.Projection) {
	var sum float64
	for _, g := range p.DriveGBps {
		sum += g
	}
	fmt.Fprintf(out, "K3 (93 layers, %s spine) in %.0f GB of RAM, %d drive(s) of %s GB/s (%.1f GB/s together)\n",
		p.Spine, float64(p.Plan.RAM)/1e9, len(p.DriveGBps), fmtGBps(p.DriveGBps, ","), sum)
	fmt.Fprintln(out, p.Plan)
	fmt.Fprintf(out, "disk per token: %.2f GB (%.2f GB of spine, from the mirror's drive only; %.2f GB of experts, from every drive)\n",
		float64(p.Plan.DiskBytesPerToken)/1e9, float64(p.Plan.StreamedSpineBytes)/1e9, float64(p.Plan.ExpertBytesPerToken)/1e9)
	fmt.Fprintf(out, "  disk term: %.2f s = max(%.2f GB ÷ %.1f GB/s, %.2f GB ÷ %.1f GB/s)\n",
		p.DiskSeconds, float64(p.Plan.DiskBytesPerToken)/1e9, sum, float64(p.Plan.StreamedSpineBytes)/1e9, p.DriveGBps[0])
	fmt.Fprintf(out, "compute per token (%s):\n", p.Compute.Source)
	mv := p.Compute.MatVecBF16
	if p.Spine == "int8" && p.Compute.MatVecInt8 > 0 {
		mv = p.Compute.MatVecInt8
	}
	fmt.Fprintf(out, "  spine: %.1f GB ÷ %.1f GB/s = %.2f s; experts: %.1f GB ÷ %.1f GB/s = %.2f s; together %.2f s\n",
		float64(p.SpineComputeBytes)/1e9, mv, p.SpineSeconds, float64(p.ExpertComputeBytes)/1e9, p.Compute.ExpertFFN, p.ExpertSeconds, p.ComputeSeconds())
	fmt.Fprintf(out, "projected: %.2f s/token (%.2f tokens/s) with reads and compute overlapped, %.2f s/token serial\n",
		p.Overlapped, 1/p.Overlapped, p.Serial)
}

// projectTable prints the Macs' projections as a Markdown table.
func projectTable(out io.Writer, rates bench.ComputeRates) error {
	fmt.Fprintf(out, "Compute: %s.\n\n", rates.Source)
	fmt.Fprintln(out, "| machine | spine | drives GB/s | pinned | expert cache | from disk / token | disk s | compute s | projected s/token (tok/s) | serial s |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|---|---|---|---|")
	for _, m := range bench.Macs {
		for _, int8 := range []bool{false, true} {
			p, err := bench.ProjectK3(bench.ProjectOptions{RAM: int64(m.RAMGB * 1e9), Int8: int8, DriveGBps: m.DriveGBps, Compute: rates})
			if err != nil {
				return err
			}
			pinned := fmt.Sprintf("head + %d of 93 layers", p.Plan.PinnedLayers)
			if !p.Plan.GlobalsPinned {
				pinned = "none"
			}
			fmt.Fprintf(out, "| %s | %s | %s | %s | %d (%.1f GB) | %.1f GB (%.1f experts) | %.2f | %.2f | **%.2f** (%.2f) | %.2f |\n",
				m.Name, p.Spine, fmtGBps(p.DriveGBps, " + "), pinned,
				p.Plan.CacheExperts, float64(p.Plan.CacheBytes)/1e9, float64(p.Plan.DiskBytesPerToken)/1e9,
				float64(p.Plan.ExpertBytesPerToken)/1e9, p.DiskSeconds, p.ComputeSeconds(), p.Overlapped, 1/p.Overlapped, p.Serial)
		}
	}
	fmt.Fprintln(out)
	for _, m := range bench.Macs {
		fmt.Fprintf(out, "- %s: %s\n", m.Name, m.Note)
	}
	return nil
}

// fmtGBps writes bandwidths with three significant digits.
func fmtGBps(v []float64, sep string) string {
	parts := make([]string, len(v))
	for i, g := range v {
		parts[i] = strconv.FormatFloat(g, 'g', 3, 64)
	}
	return strings.Join(parts, sep)
}
