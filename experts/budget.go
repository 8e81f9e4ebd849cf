package experts

import (
	"fmt"
	"math"
	"strings"

	"github.com/deltafin/deltafin/internal/directio"
)

// The RAM plan: how much of RAM the pinned spine and the expert cache get.
// It lives with the expert store because its output is what the store and
// the spine ring are sized by, and because bench projects the full K3 with
// it without a model.

// gib is 2^30 bytes.
const gib = 1 << 30

// ErrBudget reports a RAM budget too small to run the model at all.
var ErrBudget = fmt.Errorf("experts: RAM budget too small")

// BudgetInput describes the machine and the checkpoint for PlanBudget.
type BudgetInput struct {
	TotalRAM     int64 // physical RAM (sysinfo: MemTotal, hw.memsize)
	AvailableRAM int64 // allocatable now (MemAvailable; free+purgeable on macOS); 0 = unknown
	// OverrideRAM is --ram-gb: the RAM Deltafin may take, all of it
	// (weights, the expert cache and the working set); no reserve is
	// subtracted, since the person who set it has left the rest to the
	// system. 0 = plan from what the machine has available now.
	OverrideRAM int64
	// GlobalBytes are spine bytes outside the decoder layers that stay in
	// RAM (embedding, lm_head, final norms).
	GlobalBytes int64
	// LayerBytes is the spine of each decoder layer in layer order
	// (attention, norms, router, latent projections, shared experts).
	LayerBytes []int64
	// WorkingBytes is what the engine needs besides weights: the store's
	// in-flight and prefetch buffers, session caches, activations.
	WorkingBytes int64
	// DraftBytes are a drafter's weights, resident beside the target's for
	// the model's life: taken before any spine is pinned.
	DraftBytes      int64
	SpanBytes       int64 // one routed expert (K3: checkpoint.ExpertSpanBytes)
	MoELayers       int   // layers with routed experts (K3: 92)
	ExpertsPerLayer int   // K3: 896
	TopK            int   // K3: 16
}

// BudgetPlan is how RAM is spent: a reserve for the system, spine layers
// pinned in layer order, an expert cache in what remains.
type BudgetPlan struct {
	RAM int64 `json:"ram"` // the RAM planned for: --ram-gb, else what is available now (else physical)
	// Reserve is left to the system out of RAM: nothing under --ram-gb;
	// else the headroom above the working set that keeps the page cache
	// and other programs' growth from pushing Deltafin into the
	// out-of-memory killer (Headroom), and no less than the fixed share of
	// physical RAM (max(10 GiB, 18%)) the OS itself needs.
	Reserve int64 `json:"reserve"`
	Working int64 `json:"working"` // the engine's working set beside the weights
	Draft   int64 `json:"draft"`   // a drafter's resident weights (BudgetInput.DraftBytes)
	Usable  int64 `json:"usable"`  // RAM − reserve − working set − drafter: for weights and the expert cache
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
	// SlotBytes is the RAM one cached expert takes (its aligned buffer), so
	// that a shrunk cache (Model.SetCacheBudget) can be sized in bytes.
	SlotBytes int64 `json:"slot_bytes"`
	// StreamedSpineBytes is read from disk every token (the spine not pinned).
	StreamedSpineBytes int64 `json:"streamed_spine_bytes"`
	// SpineShortBytes is the RAM more that would pin the whole spine (0
	// when it is pinned): what --ram-gb would have to add to stop reading
	// StreamedSpineBytes per token.
	SpineShortBytes int64 `json:"spine_short_bytes"`
	// ExpertBytesPerToken is the routed-expert traffic per token with the
	// cache hit rate of uniform routing (heat ranking does better: a floor).
	ExpertBytesPerToken int64 `json:"expert_bytes_per_token"`
	DiskBytesPerToken   int64 `json:"disk_bytes_per_token"` // StreamedSpineBytes + ExpertBytesPerToken
}

// systemReserve is the RAM of the whole machine left to the OS and other
// programs: max(10 GiB, 18% of ram).
func systemReserve(ram int64) int64 { return max(10*gib, ram*18/100) }

// Headroom is what a plan leaves free of the RAM available now, above the
// working set: an eighth of it, at least 1 GiB. It is room for the page
// cache the spine's reads and the program's own files go through, and for
// other programs to grow a little before the monitor has to shrink the
// expert cache; planning to the last byte of MemAvailable is what put a
// 10.3 GB machine into the out-of-memory killer.
func Headroom(available int64) int64 { return max(gib, available/8) }

// PlanBudget splits RAM between the pinned spine and the expert cache. A
// budget that pins nothing still runs (every layer streams); only a budget
// without room for the working set is refused.
//
// Without an override the plan is the RAM available now less Headroom, and
// never more than physical RAM less the system's fixed share (which is all
// there is to go on when availability is unknown). With --ram-gb the plan
// is that many bytes for Deltafin in all, working set included.
func PlanBudget(in BudgetInput) (BudgetPlan, error) {
	p := BudgetPlan{RAM: in.TotalRAM, Working: in.WorkingBytes, Draft: in.DraftBytes}
	var free int64
	switch {
	case in.OverrideRAM > 0:
		p.RAM = in.OverrideRAM
		free = p.RAM
	default:
		p.Reserve = systemReserve(in.TotalRAM)
		free = in.TotalRAM - p.Reserve
		if in.AvailableRAM > 0 && in.AvailableRAM-Headroom(in.AvailableRAM) < free {
			p.RAM = in.AvailableRAM
			p.Reserve = Headroom(in.AvailableRAM)
			free = p.RAM - p.Reserve
		}
	}
	p.Usable = free - in.WorkingBytes - in.DraftBytes
	if p.Usable < 0 {
		what := fmt.Sprintf("%s of RAM leaves %s after the %s kept free", fmtBytes(p.RAM), fmtBytes(max(free, 0)), fmtBytes(p.Reserve))
		if in.OverrideRAM > 0 {
			what = fmt.Sprintf("--ram-gb %s", fmtBytes(p.RAM))
		}
		need := fmt.Sprintf("the engine's working set needs %s", fmtBytes(in.WorkingBytes))
		if in.DraftBytes > 0 {
			need += fmt.Sprintf(" and the drafter %s", fmtBytes(in.DraftBytes))
		}
		return p, fmt.Errorf("%w: %s, and %s", ErrBudget, what, need)
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
	// part is one run that the ring reads ahead of compute. The longest
	// prefix whose ring for the layers after it still fits is pinned; the
	// whole spine needs no ring, so it can fit where a prefix one layer
	// shorter does not (each prefix is tried, not grown until one fails).
	if p.GlobalsPinned {
		var prefix int64
		for i, b := range in.LayerBytes {
			prefix += b
			if prefix+ring(i+1) <= left {
				p.PinnedLayers, p.PinnedBytes = i+1, in.GlobalBytes+prefix
			}
		}
		left -= p.PinnedBytes - in.GlobalBytes
	}
	p.RingBytes = ring(p.PinnedLayers)
	if p.RingBytes > left {
		return p, fmt.Errorf("%w: %s of RAM leaves %s for weights, and streaming the spine needs two layer buffers of %s",
			ErrBudget, fmtBytes(p.RAM), fmtBytes(p.Usable), fmtBytes(p.RingBytes/2))
	}
	left -= p.RingBytes
	p.StreamedSpineBytes = spine - p.PinnedBytes
	if p.StreamedSpineBytes > 0 {
		// Pinning everything needs the spine in RAM instead of the ring.
		p.SpineShortBytes = spine - p.Usable
	}
	if in.SpanBytes > 0 {
		slot := directio.AlignUp(in.SpanBytes) + directio.Align // a store buffer
		p.SlotBytes = slot
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
	fmt.Fprintf(&b, "RAM plan: %s, %s kept free, %s working set, %s for weights\n",
		fmtBytes(p.RAM), fmtBytes(p.Reserve), fmtBytes(p.Working), fmtBytes(p.Usable))
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
	if p.Draft > 0 {
		fmt.Fprintf(&b, "  drafter: %s resident\n", fmtBytes(p.Draft))
	}
	fmt.Fprintf(&b, "  expert cache: %s (%d experts)\n", fmtBytes(p.CacheBytes), p.CacheExperts)
	fmt.Fprintf(&b, "  expected from disk per token: %s (%s of experts)", fmtBytes(p.DiskBytesPerToken), fmtBytes(p.ExpertBytesPerToken))
	if s := p.SpineWarning(); s != "" {
		b.WriteString("\n  " + s)
	}
	return b.String()
}

// SpineWarning says what the plan gives up when it streams the spine, and
// what that costs per token, or "" when the whole spine is pinned. Decode
// falls off a cliff there (each token reads the streamed layers from disk
// on top of its experts), so a small change of --ram-gb must not cross it
// silently.
func (p BudgetPlan) SpineWarning() string {
	if p.StreamedSpineBytes <= 0 {
		return ""
	}
	head := ""
	if !p.GlobalsPinned {
		head = "the embedding and lm_head and "
	}
	// --ram-gb is Deltafin's whole share: the working set and the spine.
	need := p.RAM - p.Reserve + p.SpineShortBytes
	return fmt.Sprintf("the spine does not fit: %sthe layers from %d on are read from disk every token, %s per token on top of the experts; %s more RAM (--ram-gb %.1f) would pin it",
		head, p.PinnedLayers, fmtBytes(p.StreamedSpineBytes), fmtBytes(p.SpineShortBytes), math.Ceil(float64(need)/1e8)/10)
}

// fmtBytes writes n in GB (10^9) with two decimals, or MB below 1 GB.
func fmtBytes(n int64) string {
	if n >= 1e9 || n <= -1e9 {
		return fmt.Sprintf("%.2f GB", float64(n)/1e9)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}
