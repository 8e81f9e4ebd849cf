package engine

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBestDepth prices constructed cases (bytes per pass; no timing).
func TestBestDepth(t *testing.T) {
	t.Parallel()
	const GB = 1e9
	// K3-like: 60 MoE layers × 8 experts of 22 MB with nothing cached.
	experts := priceInputs{Demand: 480, PerExpert: 22e6, Growth: 0.69, MaxK: draftMax}
	for _, tc := range []struct {
		name string
		in   func() priceInputs
		want func(t *testing.T, k int, cost, base float64)
	}{
		{"the spine streamed: drafting shares its read and pays deeply", func() priceInputs {
			in := experts
			in.Spine, in.Accept = 20*GB, 0.8
			return in
		}, func(t *testing.T, k int, cost, base float64) {
			require.GreaterOrEqual(t, k, 3)
			require.Less(t, cost, 0.6*base)
		}},
		{"the spine streamed and big, poor drafts: still one", func() priceInputs {
			in := experts
			in.Spine, in.Accept = 40*GB, 0.2
			return in
		}, func(t *testing.T, k int, cost, base float64) {
			require.Equal(t, 1, k)
		}},
		{"the spine streamed, poor drafts: the union outweighs the share", func() priceInputs {
			in := experts
			in.Spine, in.Accept = 20*GB, 0.2
			return in
		}, func(t *testing.T, k int, cost, base float64) { require.Zero(t, k) }},
		{"the spine resident, poor drafts: off", func() priceInputs {
			in := experts
			in.Accept = 0.3
			return in
		}, func(t *testing.T, k int, cost, base float64) {
			require.Zero(t, k)
			require.Equal(t, base, cost)
		}},
		{"the spine resident, good drafts: a little", func() priceInputs {
			in := experts
			in.Accept = 0.9
			return in
		}, func(t *testing.T, k int, cost, base float64) {
			require.Positive(t, k)
			require.Less(t, cost, base)
			require.Greater(t, cost, 0.5*base, "the union of experts grows with T")
		}},
		{"every expert cached and the spine resident: nothing to save", func() priceInputs {
			in := experts
			in.PerExpert, in.Accept = 0, 1
			return in
		}, func(t *testing.T, k int, cost, base float64) { require.Zero(t, k) }},
		{"experts disjoint per position: the union costs as much as it gives", func() priceInputs {
			in := experts
			in.Growth, in.Accept = 1, 0.95
			return in
		}, func(t *testing.T, k int, cost, base float64) { require.Zero(t, k) }},
		{"no room to draft", func() priceInputs {
			in := experts
			in.Spine, in.Accept, in.MaxK = 20*GB, 0.9, 0
			return in
		}, func(t *testing.T, k int, cost, base float64) { require.Zero(t, k) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in()
			k, cost := bestDepth(in)
			tc.want(t, k, cost, in.passBytes(1))
		})
	}
	// The arithmetic: T = 3 at a = ½ gives 1.75 tokens for S + D·E·(1 + 2g).
	in := priceInputs{Accept: 0.5, Spine: 100, Demand: 10, Growth: 0.5, PerExpert: 2}
	require.InDelta(t, 1.75, in.passTokens(3), 1e-12)
	require.InDelta(t, 100+10*2*2, in.passBytes(3), 1e-9)
}

// TestDraftPriceSwitches drives a session's pricing with constructed
// passes: it learns the spine's and the experts' bytes from the store's
// counters, drafts while drafts are accepted, switches off when they stop
// being, probes every probeEvery passes, and comes back on when a probe's
// drafts are accepted again.
func TestDraftPriceSwitches(t *testing.T) {
	t.Parallel()
	p := draftPrice{streamed: true, demand: 480, acc: 1, rej: 1, growth: growthPrior}
	require.Equal(t, 1, p.depth(draftMax), "nothing measured yet: nothing to price, one draft")
	// The spine resident: one step reads 480 demanded experts, 22 MB each.
	p.record(1, 0, 480, 480*22e6, 0)
	require.InDelta(t, 22e6, p.perExp, 1)
	require.Zero(t, p.depth(draftMax), "a = ½ (the prior) does not pay for the union")
	// Good drafts arrive (a probe is due only later; force passes).
	for range 20 {
		p.record(5, 4, int64(480*(1+4*0.5)), int64(480*(1+4*0.5)*22e6), 0)
	}
	require.InDelta(t, 0.5, p.growth, 0.01, "the union's growth measured from demanded experts")
	k := p.depth(draftMax)
	require.Positive(t, k, "accepted drafts pay")
	// They stop being accepted: off.
	for range 30 {
		p.record(k+1, 0, 480*2, 480*2*22e6, 0)
	}
	require.Zero(t, p.depth(draftMax))
	// Off: a probe every probeEvery plain passes.
	probes := 0
	for range 3 * probeEvery {
		if d := p.depth(draftMax); d > 0 {
			probes++
			p.record(d+1, 0, 480*2, 480*2*22e6, 0)
		} else {
			p.record(1, 0, 480, 480*22e6, 0)
		}
	}
	require.Equal(t, 2, probes, "probes while off")
	// Probes accepted again: back on.
	for range 40 {
		d := max(p.depth(draftMax), 1)
		p.record(d+1, d, int64(480*(1+float64(d)*0.5)), int64(480*(1+float64(d)*0.5)*22e6), 0)
	}
	require.Positive(t, p.depth(draftMax), "back on")

	// With the spine streamed the same poor drafts still pay one token.
	q := draftPrice{streamed: true, demand: 480, acc: 1, rej: 1, growth: growthPrior}
	q.record(1, 0, 480, 480*22e6, 20e9)
	for range 30 {
		q.record(2, 0, 480*2, 480*2*22e6, 20e9)
	}
	require.InDelta(t, 20e9, q.spine, 1)
	require.Equal(t, 0, q.depth(draftMax), "a near 0: nothing to share the spine with")
	for range 10 {
		q.record(2, 1, 480*2, 480*2*22e6, 20e9)
	}
	require.Positive(t, q.depth(draftMax))

	// Streamed but every pass reads nothing (all cached): as in RAM.
	c := draftPrice{streamed: true, demand: 480, acc: 1, rej: 1, growth: growthPrior}
	c.record(1, 0, 480, 0, 0)
	require.Equal(t, 1, c.depth(draftMax))
	// Nothing streamed: one draft per pass, as n-gram always did.
	r := draftPrice{}
	require.Equal(t, 1, r.depth(draftMax))
	require.Zero(t, r.depth(0))
	// A fixed depth (tests, bench) is kept within the room.
	f := draftPrice{streamed: true, fixed: 5}
	require.Equal(t, 5, f.depth(draftMax))
	require.Equal(t, 2, f.depth(2))
}
