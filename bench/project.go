package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/experts"
)

// The projection of `deltafin bench project`: the full K3's seconds per
// token on a machine described by its RAM, its drives' bandwidths and its
// compute rates, each term shown. Per token the disk term is the budget
// plan's bytes from disk over the drives (the streamed spine only from the
// mirror's drive, experts from any drive holding a copy: every drive holds
// them all here), the compute term the spine's matrices at the matvec rate
// plus the 16 experts of each MoE layer at the expert FFN rate; the two
// overlap (the engine reads ahead while it computes), so the projection is
// their maximum, and their sum the serial bound.

// ComputeRates are the rates a projection divides by, measured on one
// machine: weight bytes per second with every core (or the GPU).
type ComputeRates struct {
	Source     string  `json:"source"`
	MatVecBF16 float64 `json:"matvec_bf16_gb_per_s"`
	MatVecInt8 float64 `json:"matvec_int8_gb_per_s,omitempty"` // 0: MatVecBF16's
	ExpertFFN  float64 `json:"expert_ffn_gb_per_s"`
}

// LoadComputeRates reads rates measured elsewhere: a ComputeRates JSON
// file, or the output of `deltafin bench kernels --json` on that machine.
func LoadComputeRates(path string) (ComputeRates, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return ComputeRates{}, fmt.Errorf("bench: compute rates: %w", err)
	}
	var c ComputeRates
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("bench: compute rates %s: %v", path, err)
	}
	if c.MatVecBF16 == 0 && c.ExpertFFN == 0 {
		var k KernelsReport
		if err := json.Unmarshal(b, &k); err == nil && len(k.Kernels) > 0 {
			c = ratesOf(k)
			c.Source = fmt.Sprintf("%s (bench kernels, backend %s)", path, k.Backend)
		}
	}
	if !(c.MatVecBF16 > 0 && c.ExpertFFN > 0) {
		return c, fmt.Errorf("bench: compute rates %s: need matvec_bf16_gb_per_s and expert_ffn_gb_per_s above 0 (or bench kernels --json output)", path)
	}
	if c.Source == "" {
		c.Source = path
	}
	return c, nil
}

// MeasureComputeRates measures the rates here with the kernels backend
// named (bench kernels' BF16 and int8 12288×7168 matvecs and its
// 16-expert MoE layer).
func MeasureComputeRates(ctx context.Context, backend string) (ComputeRates, error) {
	var all KernelsReport
	for _, only := range []string{"matvec_BF16_12288x7168", "matvec_I8_12288x7168", "experts_ffn_mxfp4"} {
		k, err := Kernels(ctx, KernelsOptions{Backend: backend, Only: only})
		if err != nil {
			return ComputeRates{}, err
		}
		all.Backend = k.Backend
		all.Kernels = append(all.Kernels, k.Kernels...)
	}
	c := ratesOf(all)
	c.Source = fmt.Sprintf("measured here (bench kernels, backend %s)", all.Backend)
	if !(c.MatVecBF16 > 0 && c.ExpertFFN > 0) {
		return c, fmt.Errorf("bench: the kernels bench gave no matvec or expert FFN rate")
	}
	return c, nil
}

func ratesOf(k KernelsReport) ComputeRates {
	var c ComputeRates
	for _, r := range k.Kernels {
		switch {
		case strings.HasPrefix(r.Name, "matvec_BF16_12288x7168") && !strings.HasSuffix(r.Name, "_resident"):
			c.MatVecBF16 = r.GBps
		case strings.HasPrefix(r.Name, "matvec_I8_12288x7168") && !strings.HasSuffix(r.Name, "_resident"):
			c.MatVecInt8 = r.GBps
		case strings.HasPrefix(r.Name, "experts_ffn_mxfp4"):
			c.ExpertFFN = r.GBps
		}
	}
	return c
}

// ProjectOptions describes the machine.
type ProjectOptions struct {
	RAM       int64     // bytes
	Int8      bool      // the int8 spine (--spine int8) instead of BF16
	DriveGBps []float64 // the mirror's drive first
	Compute   ComputeRates
}

// Projection is one machine's projected s/token with its terms.
type Projection struct {
	Plan      experts.BudgetPlan `json:"plan"`
	Spine     string             `json:"spine"`
	DriveGBps []float64          `json:"drive_gb_per_s"`
	Compute   ComputeRates       `json:"compute"`
	// The per-token bytes computed: the spine's matrices (the embedding
	// is a row lookup) and the routed experts.
	SpineComputeBytes  int64 `json:"spine_compute_bytes"`
	ExpertComputeBytes int64 `json:"expert_compute_bytes"`
	// DiskSeconds is max(bytes ÷ all drives, streamed spine ÷ the
	// mirror's drive).
	DiskSeconds   float64 `json:"disk_s"`
	SpineSeconds  float64 `json:"spine_compute_s"`
	ExpertSeconds float64 `json:"expert_compute_s"`
	Overlapped    float64 `json:"s_per_token"`        // max(disk, compute)
	Serial        float64 `json:"serial_s_per_token"` // disk + compute
}

// ComputeSeconds is the compute term.
func (p Projection) ComputeSeconds() float64 { return p.SpineSeconds + p.ExpertSeconds }

// ProjectK3 plans the full 93-layer K3 in o.RAM and projects it.
func ProjectK3(o ProjectOptions) (Projection, error) {
	if len(o.DriveGBps) == 0 {
		return Projection{}, fmt.Errorf("bench: project: no drive bandwidth")
	}
	layers, globals := k3SpineBytes()
	spine := "bf16"
	if o.Int8 {
		layers, globals = k3SpineInt8Bytes()
		spine = "int8"
	}
	in := experts.BudgetInput{TotalRAM: o.RAM, AvailableRAM: o.RAM}
	in.LayerBytes, in.GlobalBytes = layers, globals
	in.SpanBytes, in.MoELayers, in.ExpertsPerLayer, in.TopK = ckpt.ExpertSpanBytes, k3MoELayers, k3Experts, k3TopK
	in.WorkingBytes = StoreWorkingBytes() + 69*96*128*128*4
	plan, err := experts.PlanBudget(in)
	if err != nil {
		return Projection{}, fmt.Errorf("bench: K3 in %.0f GB: %w", float64(o.RAM)/1e9, err)
	}
	compute := globals - k3EmbedBytes
	for _, b := range layers {
		compute += b
	}
	p := project(plan, compute, int64(k3MoELayers*k3TopK*ckpt.ExpertSpanBytes), o.DriveGBps, o.Compute, o.Int8)
	p.Spine = spine
	return p, nil
}

// k3EmbedBytes is the embedding's BF16 bytes: kept as stored in both
// spines and only looked up, never multiplied.
const k3EmbedBytes = int64(k3Vocab) * k3Hidden * 2

// project applies the model of the file comment to a plan.
func project(plan experts.BudgetPlan, spineCompute, expertCompute int64, drives []float64, c ComputeRates, int8 bool) Projection {
	p := Projection{Plan: plan, DriveGBps: drives, Compute: c, SpineComputeBytes: spineCompute, ExpertComputeBytes: expertCompute}
	var sum float64
	for _, g := range drives {
		sum += g
	}
	p.DiskSeconds = max(float64(plan.DiskBytesPerToken)/(sum*1e9), float64(plan.StreamedSpineBytes)/(drives[0]*1e9))
	mv := c.MatVecBF16
	if int8 && c.MatVecInt8 > 0 {
		mv = c.MatVecInt8
	}
	p.SpineSeconds = float64(spineCompute) / (mv * 1e9)
	p.ExpertSeconds = float64(expertCompute) / (c.ExpertFFN * 1e9)
	p.Overlapped = max(p.DiskSeconds, p.ComputeSeconds())
	p.Serial = p.DiskSeconds + p.ComputeSeconds()
	return p
}

// k3SpineInt8Bytes is k3SpineBytes for the int8 spine: each converted
// matrix (every 2-D BF16 spine matrix but the embedding and the routers)
// takes a byte per weight and a float32 scale per row in RAM.
func k3SpineInt8Bytes() ([]int64, int64) {
	conv := func(ts []synthTensor) int64 {
		var n int64
		for _, t := range ts {
			if t.dtype == "BF16" && len(t.shape) == 2 && t.shape[0] >= 2 &&
				!strings.HasSuffix(t.name, "embed_tokens.weight") && !strings.HasSuffix(t.name, "gate.weight") {
				n += t.shape[0]*t.shape[1] + 4*t.shape[0]
				continue
			}
			n += t.size()
		}
		return n
	}
	layers := make([]int64, k3Layers)
	for i := range layers {
		spine := k3LayerSpine(i, k3IsMLA(i))
		if i == 0 {
			// Layer 0: the dense MLP (gate, up 33792×7168; down 7168×33792)
			// instead of the MoE block.
			layers[0] = conv(spine[:len(spine)-8]) + 3*33792*k3Hidden + 4*(2*33792+k3Hidden)
			continue
		}
		layers[i] = conv(spine)
	}
	return layers, conv(k3Globals())
}

// Machine is one row of the projection table.
type Machine struct {
	Name      string
	RAMGB     float64
	DriveGBps []float64
	Note      string // where the figures come from
}

// Macs are the table's machines. RAM: Apple's tech specs (the largest
// configuration of each chip); SSD bandwidths: DELTAFIN-PERFORMANCE.md
// §4.2 (M1 Max internal 6.6 GB/s F_NOCACHE; the ARGODRIVE fork's M5 Max
// internal 13.6 GB/s and its three TB5 drives 7.1, 7.1 and 5.1 GB/s), and
// issue 23 for the M3/M4 Max's 7 GB/s; the M3 Ultra's is assumed equal.
var Macs = []Machine{
	{"M1 Max 64 GB", 64, []float64{6.6}, "internal SSD 6.6 GB/s (perf doc §4.2, measured)"},
	{"M3/M4 Max 128 GB", 128, []float64{7}, "internal SSD 7 GB/s (issue 23)"},
	{"M5 Max 128 GB", 128, []float64{13.6}, "internal SSD 13.6 GB/s (perf doc §4.2, fork)"},
	{"M5 Max 128 GB, 4 drives", 128, []float64{13.6, 7.1, 7.1, 5.1}, "internal + 3 TB5 SSDs, 32.9 GB/s summed (perf doc §4.2, fork)"},
	{"M3 Ultra 512 GB", 512, []float64{7}, "internal SSD, 7 GB/s assumed (no measured figure)"},
}

// ProjectSlice applies the projection to the slice's streamed run in r
// (the spine as the full K3's on this machine, experts uncached), with
// the rates r measured: the check of the model against what the engine
// measured in the same run (EngineStreamed.SecondsPerToken).
func ProjectSlice(r SliceReport, l SliceLayout) Projection {
	compute := l.GlobalBytes - k3EmbedBytes
	for _, b := range l.SpineBytes {
		compute += b
	}
	rates := ComputeRates{Source: "measured in this run", MatVecBF16: r.MatVecBF16GBps, ExpertFFN: r.ExpertFFNGBps}
	p := project(r.StreamedPlan, compute, int64(len(l.Layers)*k3TopK*ckpt.ExpertSpanBytes), []float64{r.Bandwidth[0].GBPerSecond}, rates, false)
	p.Spine = "bf16"
	return p
}
