package engine

import (
	"runtime/debug"
)

// SetCacheBudget resizes the routed-expert cache to at most bytes of RAM,
// never beyond what the plan gave it, and returns the bytes it may now take
// (whole experts). Shrinking drops the coldest cached experts at once and
// hands their buffers back to the OS (experts a pass holds at that moment
// are evicted as the cache turns over). It is how a running model gives memory back when the
// machine runs short (the app's memory monitor) without reopening: the
// cache is the only part of the plan that can shrink without changing
// which bytes a token reads. A model without an expert store returns 0.
func (m *Model) SetCacheBudget(bytes int64) int64 {
	if m.plan.SlotBytes <= 0 {
		return 0
	}
	n := int(min(max(bytes, 0)/m.plan.SlotBytes, int64(m.plan.CacheExperts)))
	freed, ok := m.experts.setCacheCap(n)
	if !ok {
		return 0
	}
	if freed {
		// The buffers were Go memory: return it now, not at the next GC
		// cycle the allocator happens to run.
		debug.FreeOSMemory()
	}
	return int64(n) * m.plan.SlotBytes
}
