package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
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
	sp := s.SpecStats()
	d.SpecPasses, d.SpecAcceptRate, d.TokensPerPass = sp.Passes, sp.AcceptRate(), sp.TokensPerPass()
	return d, nil
}

// PrefillResult is one prompt run over the slice with a cold expert store.
type PrefillResult struct {
	Tokens int `json:"tokens"`
	// TimeToFirstToken is the prompt's pass plus lm_head, in seconds.
	TimeToFirstToken float64 `json:"ttft_s"`
	// DistinctExperts is the number of (layer, expert) pairs the router
	// chose over the whole prompt; TokenMajorExperts what a token-at-a-time
	// prefill would acquire (tokens × top-k per layer).
	DistinctExperts   int   `json:"distinct_experts"`
	TokenMajorExperts int   `json:"token_major_experts"`
	DiskBytes         int64 `json:"disk_bytes"`
	// ReadAmplification is expert bytes read ÷ bytes of the distinct
	// experts (target ≤ 1.05); TokenMajorAmplification the same for a
	// token-at-a-time prefill without a cache.
	ReadAmplification       float64 `json:"read_amplification"`
	TokenMajorAmplification float64 `json:"token_major_amplification"`
}

// enginePrefill opens the slice with an empty expert cache and runs a
// prompt of o.Prefill pseudo-random token ids through it, expert-major.
func (o SliceBenchOptions) enginePrefill(ctx context.Context, plan BudgetPlan) (PrefillResult, error) {
	r := PrefillResult{Tokens: o.Prefill}
	plan.CacheExperts = 0 // every distinct expert is read: the worst case
	tracePath := filepath.Join(o.Dir, "prefill-trace.jsonl")
	tw, err := CreateTrace(tracePath)
	if err != nil {
		return r, err
	}
	defer os.Remove(tracePath)
	m, err := Open(ctx, o.Dir, Options{Backend: o.Backend, Stream: &StreamOptions{Plan: &plan, Trace: tw}})
	if err != nil {
		tw.Close()
		return r, err
	}
	store := m.experts.(*streamExperts).store
	rng := rand.New(rand.NewPCG(o.Seed, 0x9EF1))
	prompt := make([]int, o.Prefill)
	for i := range prompt {
		prompt[i] = rng.IntN(m.cfg.Vocab)
	}
	start := time.Now()
	_, err = m.NewSession().Forward(ctx, prompt, false)
	r.TimeToFirstToken = time.Since(start).Seconds()
	st := store.Stats()
	if cerr := m.Close(); err == nil {
		err = cerr
	}
	if cerr := tw.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return r, err
	}
	f, err := os.Open(tracePath)
	if err != nil {
		return r, err
	}
	defer f.Close()
	distinct := map[ExpertID]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var rec TraceRecord
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return r, fmt.Errorf("engine: prefill trace: %w", err)
		}
		r.TokenMajorExperts += len(rec.Experts)
		for _, e := range rec.Experts {
			distinct[ExpertID{rec.Layer, e}] = true
		}
	}
	if err := sc.Err(); err != nil {
		return r, err
	}
	r.DistinctExperts, r.DiskBytes = len(distinct), st.DiskBytes
	if r.DistinctExperts > 0 {
		r.ReadAmplification = float64(st.DiskBytes) / float64(int64(r.DistinctExperts)*ExpertSpanBytes)
		r.TokenMajorAmplification = float64(r.TokenMajorExperts) / float64(r.DistinctExperts)
	}
	return r, nil
}
