package engine

import (
	"context"
	"time"
)

// engineDecode runs the real forward pass over the slice (it is a K3-shaped
// checkpoint with its own config) under the budget plan, and measures the
// decode steps after the warmup ones: the router now chooses the experts.
func (o SliceBenchOptions) engineDecode(ctx context.Context, plan BudgetPlan, heat *Heat) (DecodeResult, error) {
	m, err := Open(ctx, o.Dir, Options{Backend: o.Backend, Stream: &StreamOptions{Plan: &plan, Heat: heat}})
	if err != nil {
		return DecodeResult{}, err
	}
	defer m.Close()
	store := m.experts.(*streamExperts).store
	s := m.NewSession()
	var base StoreStats
	var start time.Time
	n := 0
	_, err = s.Generate(ctx, []int{163584, 1, 2, 3}, GenerateOptions{MaxNew: o.Warmup + o.Tokens + 1}, func(int) error {
		// The first token comes from the prefill; steps start after it.
		if n == o.Warmup {
			base, start = store.Stats(), time.Now()
		}
		n++
		return nil
	})
	if err != nil {
		return DecodeResult{}, err
	}
	el := time.Since(start).Seconds()
	st := store.Stats()
	steps := float64(o.Tokens)
	demanded := float64(st.Misses - base.Misses + st.CacheHits - base.CacheHits + st.SpecHits - base.SpecHits + st.Shared - base.Shared)
	d := DecodeResult{
		Compute:           true,
		SecondsPerToken:   el / steps,
		DiskBytesPerToken: float64(st.DiskBytes-base.DiskBytes)/steps + float64(plan.StreamedSpineBytes),
		CacheHitRate:      float64(st.CacheHits-base.CacheHits) / demanded,
		PrefetchHitRate:   float64(st.SpecHits-base.SpecHits) / demanded,
		PrefetchWasted:    float64(st.SpecWasted-base.SpecWasted) / steps,
	}
	d.DiskGBPerSecond = d.DiskBytesPerToken / d.SecondsPerToken / 1e9
	return d, nil
}
