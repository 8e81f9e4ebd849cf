package bench

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/deltafin/deltafin/engine"
)

// ErrPrefillLength is Prefill's error for a prompt length the model cannot
// take (not positive, or past its context).
var ErrPrefillLength = errors.New("bench: bad prefill length")

// PrefillOptions configures Prefill.
type PrefillOptions struct {
	// Tokens are the prompt lengths, each prefilled in a fresh Session.
	Tokens []int
	// Threads runs the FMA peak (runtime.NumCPU() when 0); the model's
	// backend has its own.
	Threads int
	// PeakTime is how long the FMA peak is measured, before the prompts
	// and again after them (300 ms by default).
	PeakTime time.Duration
}

// PrefillReport is what `deltafin bench prefill --json` prints.
type PrefillReport struct {
	Model   string `json:"model"`
	Backend string `json:"backend"`
	Threads int    `json:"fma_threads"`
	// FMAPeakGFLOPS is the machine's fp32 multiply-add rate (FMAPeak),
	// the limit every flop_ratio is relative to: the best of a measurement
	// before the prompts and one after them.
	FMAPeakGFLOPS float64 `json:"fma_peak_gflops"`
	// GPUPeakGFLOPS is the GPU's own fp32 multiply-add rate (GPUPeak),
	// measured before and after the prompts, where the model's backend has
	// a GPU; absent otherwise.
	GPUPeakGFLOPS float64         `json:"gpu_peak_gflops,omitempty"`
	Lengths       []PrefillLength `json:"lengths"`
}

// PrefillLength is one prompt length's prefill.
type PrefillLength struct {
	Tokens     int     `json:"tokens"`
	Seconds    float64 `json:"seconds"`
	TokensPerS float64 `json:"tokens_per_s"`
	// FLOPs is the prompt's arithmetic as engine.Info estimates it:
	// T·TokenFLOPs + HeadFLOPs (one row of logits) + T(T+1)/2·PairFLOPs.
	FLOPs     float64 `json:"flops"`
	GFLOPS    float64 `json:"gflops"`
	FLOPRatio float64 `json:"flop_ratio"` // GFLOPS / FMAPeakGFLOPS
	// GPUFLOPRatio is GFLOPS / GPUPeakGFLOPS, where there is a GPU.
	GPUFLOPRatio float64 `json:"gpu_flop_ratio,omitempty"`
}

// PrefillFLOPs is the arithmetic of a T-token prefill that returns the
// last position's logits, from the model's Info.
func PrefillFLOPs(info engine.Info, T int) float64 {
	t := float64(T)
	return t*float64(info.TokenFLOPs) + float64(info.HeadFLOPs) + t*(t+1)/2*float64(info.PairFLOPs)
}

// PrefillIDs is a deterministic synthetic prompt of n token ids within a
// vocabulary of vocab: a stride through it that does not repeat a short
// cycle (7919 is prime), so routing spreads as over text.
func PrefillIDs(n, vocab int) []int {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = (i*7919 + 13) % vocab
	}
	return ids
}

// Prefill measures, in one run, the machine's FMA peak and the prefill of
// a synthetic prompt of each length in opt.Tokens through m's public API
// (a fresh Session each, after one untimed short prompt that warms the
// caches and the worker pool), in the order given.
func Prefill(ctx context.Context, m *engine.Model, opt PrefillOptions) (PrefillReport, error) {
	info := m.Info()
	if opt.Threads <= 0 {
		opt.Threads = runtime.NumCPU()
	}
	if opt.PeakTime <= 0 {
		opt.PeakTime = 300 * time.Millisecond
	}
	if len(opt.Tokens) == 0 {
		return PrefillReport{}, fmt.Errorf("%w: no lengths", ErrPrefillLength)
	}
	for _, n := range opt.Tokens {
		if n <= 0 || (info.ContextLen > 0 && n > info.ContextLen) {
			return PrefillReport{}, fmt.Errorf("%w: %d tokens (the model takes 1 to %d)", ErrPrefillLength, n, info.ContextLen)
		}
	}
	rep := PrefillReport{Model: info.ID, Backend: info.Backend, Threads: opt.Threads}
	var err error
	if rep.FMAPeakGFLOPS, err = FMAPeak(ctx, opt.PeakTime, opt.Threads); err != nil {
		return rep, err
	}
	peaker, hasGPU := gpuPeaker(info.Backend)
	if hasGPU {
		if rep.GPUPeakGFLOPS, err = GPUPeak(ctx, peaker, opt.PeakTime); err != nil {
			return rep, err
		}
	}
	if _, err := m.NewSession().Forward(ctx, PrefillIDs(min(16, opt.Tokens[0]), info.VocabSize), false); err != nil {
		return rep, fmt.Errorf("bench: prefill warm-up: %w", err)
	}
	for _, n := range opt.Tokens {
		ids := PrefillIDs(n, info.VocabSize)
		s := m.NewSession()
		start := time.Now()
		if _, err := s.Forward(ctx, ids, false); err != nil {
			return rep, fmt.Errorf("bench: prefill of %d tokens: %w", n, err)
		}
		sec := time.Since(start).Seconds()
		flops := PrefillFLOPs(info, n)
		rep.Lengths = append(rep.Lengths, PrefillLength{Tokens: n, Seconds: sec, TokensPerS: float64(n) / sec, FLOPs: flops, GFLOPS: flops / sec / 1e9})
	}
	if rep.FMAPeakGFLOPS, err = fmaPeakAgain(ctx, opt.PeakTime, opt.Threads, rep.FMAPeakGFLOPS); err != nil {
		return rep, err
	}
	if hasGPU {
		again, err := GPUPeak(ctx, peaker, opt.PeakTime)
		if err != nil {
			return rep, err
		}
		rep.GPUPeakGFLOPS = max(rep.GPUPeakGFLOPS, again)
	}
	for i := range rep.Lengths {
		rep.Lengths[i].FLOPRatio = rep.Lengths[i].GFLOPS / rep.FMAPeakGFLOPS
		if hasGPU {
			rep.Lengths[i].GPUFLOPRatio = rep.Lengths[i].GFLOPS / rep.GPUPeakGFLOPS
		}
	}
	return rep, nil
}
