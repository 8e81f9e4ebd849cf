package bench

import (
	"context"
	"fmt"
	"slices"

	"github.com/deltafin/deltafin/engine"
	"github.com/deltafin/deltafin/experts"
)

// DraftResult is one decode of bench slice --draft over the slice's
// streamed plan: T = 1 (no drafting), or the oracle drafter at acceptance
// R, measured over the same tokens as the T = 1 run (the same warmup, the
// same answer: the oracle proposes the T = 1 run's own tokens).
type DraftResult struct {
	Draft string  `json:"draft"` // "T=1" or "oracle:R"
	Rate  float64 `json:"rate"`  // R (0 for T = 1)
	DecodeResult
	// MeanT is the positions a target pass verified on average (1 + the
	// drafted tokens per pass, chosen by the engine's pricing).
	MeanT float64 `json:"mean_positions_per_pass"`
	// SpeedupVsT1 is the T = 1 run's s/token ÷ this run's; BytesVsT1 this
	// run's bytes/token ÷ the T = 1 run's (the same run of bench slice).
	SpeedupVsT1 float64 `json:"speedup_vs_t1"`
	BytesVsT1   float64 `json:"bytes_vs_t1"`
}

// engineDrafts decodes with T = 1 and then with the oracle at each of
// o.Drafts, all under plan, and checks that every drafting run's tokens are
// the T = 1 run's.
func (o SliceBenchOptions) engineDrafts(ctx context.Context, plan experts.BudgetPlan, heat string) ([]DraftResult, error) {
	// The T = 1 run decodes draftExtra tokens past the measured ones, so
	// its answer covers the drafts of the oracle runs' last passes. Every
	// run measures after draftWarm tokens: each opens with an empty cache,
	// so each fills it over the same tokens.
	const draftExtra, draftWarm = 8, 8
	base, conv, first, err := o.engineDecode(ctx, plan, heat, "t1", decodeRun{noSpec: true, extra: draftExtra, warm: max(draftWarm, o.Warmup+1)})
	if err != nil {
		return nil, err
	}
	out := []DraftResult{{Draft: "T=1", DecodeResult: base, MeanT: 1, SpeedupVsT1: 1, BytesVsT1: 1}}
	for _, R := range o.Drafts {
		d, err := engine.Draft{Kind: "oracle", Rate: R}.WithAnswer(conv, o.Seed)
		if err != nil {
			return out, err
		}
		r, got, _, err := o.engineDecode(ctx, plan, heat, d.Name(), decodeRun{noSpec: true, draft: d, warm: first})
		if err != nil {
			return out, err
		}
		if len(got) > len(conv) || !slices.Equal(got, conv[:len(got)]) {
			return out, fmt.Errorf("bench: %s changed the tokens: drafting must give the target's own", d.Name())
		}
		res := DraftResult{Draft: d.Name(), Rate: R, DecodeResult: r}
		if r.TargetPasses > 0 {
			res.MeanT = float64(r.TargetPasses+r.Drafted) / float64(r.TargetPasses)
		}
		if r.SecondsPerToken > 0 {
			res.SpeedupVsT1 = base.SecondsPerToken / r.SecondsPerToken
		}
		if base.DiskBytesPerToken > 0 {
			res.BytesVsT1 = r.DiskBytesPerToken / base.DiskBytesPerToken
		}
		out = append(out, res)
	}
	return out, nil
}
