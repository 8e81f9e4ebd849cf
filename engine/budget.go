package engine

import (
	"fmt"
	"strings"

	"github.com/deltafin/deltafin/internal/directio"
)

// gib is 2^30 bytes.
const gib = 1 << 30

// ErrBudget reports a RAM budget too small to run the model at all.
var ErrBudget = fmt.Errorf("engine: RAM budget too small")

// BudgetInput describes the machine and the checkpoint for PlanBudget.
type BudgetInput struct {
	TotalRAM     int64 // physical RAM (sysinfo: MemTotal, hw.memsize)
	AvailableRAM int64 // allocatable now (MemAvailable; free+inactive+purgeable on macOS); 0 = unknown
	OverrideRAM  int64 // --ram-gb: plan as if the machine had this much; 0 = use TotalRAM
	// GlobalBytes are spine bytes outside the decoder layers that stay in
	// RAM (embedding, lm_head, final norms).
	GlobalBytes int64
	// LayerBytes is the spine of each decoder layer in layer order
	// (attention, norms, router, latent projections, shared experts).
	LayerBytes []int64
	// WorkingBytes is what the engine needs besides weights: the store's
	// in-flight and prefetch buffers, session caches, activations.
	WorkingBytes    int64
	SpanBytes       int64 // one routed expert (K3: checkpoint.ExpertSpanBytes)
	MoELayers       int   // layers with routed experts (K3: 92)
	ExpertsPerLayer int   // K3: 896
	TopK            int   // K3: 16
}

// BudgetPlan is how RAM is spent: a reserve for the system, spine layers
// pinned in layer order, an expert cache in what remains.
type BudgetPlan struct {
	RAM     int64 `json:"ram"`     // the RAM planned for (override or physical)
	Reserve int64 `json:"reserve"` // max(10 GiB, 18% of RAM), left to the system
	Usable  int64 `json:"usable"`  // RAM − reserve − working set (and no more than is available)
	// GlobalsPinned says the embedding, lm_head and the final norms stay in
	// RAM; they are pinned before any layer because every token reads them.
	GlobalsPinned bool  `json:"globals_pinned"`
	PinnedLayers  int   `json:"pinned_layers"` // layers 0..PinnedLayers-1 stay in RAM
	PinnedBytes   int64 `json:"pinned_bytes"`  // globals and pinned layers
	// RingBytes are the two layer buffers the streamed spine is read into
	// (spinering.go: one layer computes while the next loads): twice the
	// largest streamed layer, 0 when every layer is pinned.
	RingBytes    int64 `json:"ring_bytes"`
	CacheBytes   int64 `json:"cache_bytes"`   // the routed-expert cache
	CacheExperts int   `json:"cache_experts"` // CacheBytes ÷ the span size
	// StreamedSpineBytes is read from disk every token (the spine not pinned).
	StreamedSpineBytes int64 `json:"streamed_spine_bytes"`
	// ExpertBytesPerToken is the routed-expert traffic per token with the
	// cache hit rate of uniform routing (heat ranking does better: a floor).
	ExpertBytesPerToken int64 `json:"expert_bytes_per_token"`
	DiskBytesPerToken   int64 `json:"disk_bytes_per_token"` // StreamedSpineBytes + ExpertBytesPerToken
}

// systemReserve is the RAM left to the OS and other programs:
// max(10 GiB, 18% of ram).
func systemReserve(ram int64) int64 { return max(10*gib, ram*18/100) }

// PlanBudget splits RAM between the pinned spine and the expert cache. A
// budget that pins nothing still runs (every layer streams); only a budget
// without room for the working set is refused.
func PlanBudget(in BudgetInput) (BudgetPlan, error) {
	p := BudgetPlan{RAM: in.TotalRAM}
	if in.OverrideRAM > 0 {
		p.RAM = in.OverrideRAM
	}
	p.Reserve = systemReserve(p.RAM)
	free := p.RAM - p.Reserve
	if in.OverrideRAM == 0 && in.AvailableRAM > 0 {
		free = min(free, in.AvailableRAM)
	}
	p.Usable = free - in.WorkingBytes
	if p.Usable < 0 {
		return p, fmt.Errorf("%w: %s of RAM leaves %s after the %s system reserve, and the engine's working set needs %s",
			ErrBudget, fmtBytes(p.RAM), fmtBytes(max(free, 0)), fmtBytes(p.Reserve), fmtBytes(in.WorkingBytes))
	}
	left := p.Usable
	// ring(i) is the streamed spine's two buffers when layers i.. stream.
	largest := make([]int64, len(in.LayerBytes)+1)
	for i := len(in.LayerBytes) - 1; i >= 0; i-- {
		largest[i] = max(largest[i+1], in.LayerBytes[i])
	}
	ring := func(i int) int64 { return 2 * largest[i] }
	var spine int64 = in.GlobalBytes
	if in.GlobalBytes+ring(0) <= left {
		p.GlobalsPinned = true
		left -= in.GlobalBytes
		p.PinnedBytes += in.GlobalBytes
	}
	for _, b := range in.LayerBytes {
		spine += b
	}
	// Layer order: a prefix is pinned, never a scattering, so the streamed
	// part is one run that the ring reads ahead of compute. A layer is
	// pinned only if the ring for the layers after it still fits.
	for i, b := range in.LayerBytes {
		if !p.GlobalsPinned || b+ring(i+1) > left {
			break
		}
		left -= b
		p.PinnedBytes += b
		p.PinnedLayers++
	}
	p.RingBytes = ring(p.PinnedLayers)
	if p.RingBytes > left {
		return p, fmt.Errorf("%w: %s of RAM leaves %s for weights, and streaming the spine needs two layer buffers of %s",
			ErrBudget, fmtBytes(p.RAM), fmtBytes(p.Usable), fmtBytes(p.RingBytes/2))
	}
	left -= p.RingBytes
	p.StreamedSpineBytes = spine - p.PinnedBytes
	if in.SpanBytes > 0 {
		slot := directio.AlignUp(in.SpanBytes) + directio.Align // a store buffer
		p.CacheExperts = int(left / slot)
		if total := in.MoELayers * in.ExpertsPerLayer; p.CacheExperts > total {
			p.CacheExperts = total
		}
		p.CacheBytes = int64(p.CacheExperts) * slot
		if total := int64(in.MoELayers) * int64(in.ExpertsPerLayer); total > 0 {
			miss := 1 - float64(p.CacheExperts)/float64(total)
			p.ExpertBytesPerToken = int64(float64(int64(in.MoELayers)*int64(in.TopK)*in.SpanBytes) * miss)
		}
	}
	p.DiskBytesPerToken = p.StreamedSpineBytes + p.ExpertBytesPerToken
	return p, nil
}

// String is the plan as printed at startup.
func (p BudgetPlan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "RAM plan: %s, %s reserved for the system, %s for weights\n",
		fmtBytes(p.RAM), fmtBytes(p.Reserve), fmtBytes(p.Usable))
	globals := "streamed"
	if p.GlobalsPinned {
		globals = "pinned"
	}
	layers := "none"
	if p.PinnedLayers > 0 {
		layers = fmt.Sprintf("0..%d", p.PinnedLayers-1)
	}
	fmt.Fprintf(&b, "  spine: head %s, layers %s pinned (%s); %s streamed per token through %s of layer buffers\n",
		globals, layers, fmtBytes(p.PinnedBytes), fmtBytes(p.StreamedSpineBytes), fmtBytes(p.RingBytes))
	fmt.Fprintf(&b, "  expert cache: %s (%d experts)\n", fmtBytes(p.CacheBytes), p.CacheExperts)
	fmt.Fprintf(&b, "  expected from disk per token: %s (%s of experts)", fmtBytes(p.DiskBytesPerToken), fmtBytes(p.ExpertBytesPerToken))
	return b.String()
}

// fmtBytes writes n in GB (10^9) with two decimals, or MB below 1 GB.
func fmtBytes(n int64) string {
	if n >= 1e9 || n <= -1e9 {
		return fmt.Sprintf("%.2f GB", float64(n)/1e9)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}
