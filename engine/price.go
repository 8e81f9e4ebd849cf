package engine

// Pricing drafts in bytes read. A verify pass of T positions reads what a
// decode step reads once for all of them (the streamed spine layers) plus
// the union of the experts its T positions route to, less what the cache
// holds; it yields 1 + a + a² + … + a^(T−1) tokens on average when each
// draft is accepted with probability a given the ones before it were. So
// per pass the engine drafts the k = T − 1 that minimises
//
//	bytes(T) / tokens(T),  bytes(T) = S + D·(1 + (T−1)·g)·E,  tokens(T) = Σ_{i<T} a^i
//
// where S is the streamed spine bytes per pass, D the experts one position
// demands (MoE layers × top-k), g the share of a further position's experts
// not already in the pass's union, and E the disk bytes per demanded expert
// (the misses' share of an expert's bytes: what the cache does not hold).
// k = 0 (T = 1) unless drafting is cheaper per token by a margin. S, g and
// E are running means of the store's counters over the session's own
// passes (Stats: spine bytes, demanded experts, expert bytes read), so the
// price follows the cache as it warms and the router as the text moves;
// a is a running acceptance rate with recent passes weighing most.
//
// With drafting off the acceptance is not observed, so every probeEvery
// passes one draft is verified anyway (a probe) to learn whether it would
// pay again. A model with nothing streamed, or whose passes read nothing
// (the spine pinned, every expert cached), reads no bytes whatever T is:
// bytes cannot price it, and it drafts one token per pass as n-gram
// speculation always did.

const (
	draftMax   = 7  // most tokens drafted per pass (DSpark's 7-token blocks)
	probeEvery = 16 // passes with drafting off between probes
	// priceMargin is how much cheaper per token a depth must be than
	// T = 1 to draft: the estimates are means, and a pass that drafts
	// also computes its positions.
	priceMargin = 0.98
	// acceptDecay weighs the acceptance counts down per verified draft
	// (a window of about 1/(1−decay) drafts).
	acceptDecay = 0.95
	// growthPrior is g before a verify pass measures it: about 69% of a
	// K3 token's experts are not the previous token's (docs/MODEL.md §10).
	growthPrior = 0.69
	// meanWeight is the running means' weight of each new pass.
	meanWeight = 0.2
)

// priceInputs are one pricing decision's numbers (bytes per pass).
type priceInputs struct {
	Accept    float64 // a: a draft's acceptance given the ones before it
	Spine     float64 // S: streamed spine bytes per pass
	Demand    float64 // D: experts one position demands
	Growth    float64 // g: a further position's new share of the union
	PerExpert float64 // E: disk bytes per demanded expert
	MaxK      int     // most tokens that can be drafted this pass
}

// passBytes is the bytes a verify pass of T positions is expected to read.
func (in priceInputs) passBytes(T int) float64 {
	return in.Spine + in.Demand*(1+float64(T-1)*in.Growth)*in.PerExpert
}

// passTokens is the tokens a pass of T positions is expected to give.
func (in priceInputs) passTokens(T int) float64 {
	sum, p := 0.0, 1.0
	for range T {
		sum += p
		p *= in.Accept
	}
	return sum
}

// bestDepth is the number of tokens to draft (0: a plain decode step) and
// its expected bytes per token.
func bestDepth(in priceInputs) (int, float64) {
	base := in.passBytes(1)
	best, bestCost := 0, base
	for k := 1; k <= in.MaxK; k++ {
		c := in.passBytes(k+1) / in.passTokens(k+1)
		if c < bestCost {
			best, bestCost = k, c
		}
	}
	if best > 0 && !(bestCost < priceMargin*base) {
		return 0, base
	}
	return best, bestCost
}

// draftPrice is a session's running estimates.
type draftPrice struct {
	streamed bool
	demand   float64 // D
	acc, rej float64 // decayed counts of accepted and rejected drafts
	spine    float64 // running S
	perExp   float64 // running E
	growth   float64 // running g
	measured bool    // a pass has been measured
	off      int     // passes since the last verify pass
	fixed    int     // > 0: always draft this many (tests, bench)
}

func newDraftPrice(m *Model) draftPrice {
	streamed := m.experts.fromDisk()
	moe := 0
	for i := range m.cfg.Layers {
		if m.cfg.IsMoE(i) {
			moe++
		}
	}
	// One accepted and one rejected draft as the prior: a = ½ until
	// drafts are seen; and a probe due at once, so the first draft there
	// is tells whether drafting pays.
	return draftPrice{streamed: streamed, demand: float64(moe * m.cfg.TopK), acc: 1, rej: 1, growth: growthPrior, off: probeEvery}
}

func (p *draftPrice) inputs(maxK int) priceInputs {
	return priceInputs{Accept: p.acc / (p.acc + p.rej), Spine: p.spine, Demand: p.demand,
		Growth: p.growth, PerExpert: p.perExp, MaxK: maxK}
}

// depth is how many tokens to draft this pass, at most maxK.
func (p *draftPrice) depth(maxK int) int {
	switch {
	case maxK < 1:
		return 0
	case p.fixed > 0:
		return min(p.fixed, maxK)
	case !p.streamed:
		return 1
	}
	in := p.inputs(maxK)
	if in.passBytes(1) == 0 {
		return 1 // everything in RAM after all: as with nothing streamed
	}
	k, _ := bestDepth(in)
	if k == 0 && p.off >= probeEvery {
		k = 1
	}
	return k
}

// record takes a decode pass's outcome: T positions, the drafts accepted,
// and the store's counters read over it (experts demanded, expert and
// spine bytes read).
func (p *draftPrice) record(T, accepted int, demanded, expertBytes, spineBytes int64) {
	if T > 1 {
		p.off = 0
		p.acc, p.rej = p.acc*pow(acceptDecay, T-1), p.rej*pow(acceptDecay, T-1)
		p.acc += float64(accepted)
		if accepted < T-1 {
			p.rej++
		}
	} else {
		p.off++
	}
	if !p.streamed {
		return
	}
	mean := func(old, x float64) float64 {
		if !p.measured {
			return x
		}
		return old + meanWeight*(x-old)
	}
	p.spine = mean(p.spine, float64(spineBytes))
	if demanded > 0 {
		p.perExp = mean(p.perExp, float64(expertBytes)/float64(demanded))
		if T > 1 && p.demand > 0 {
			g := (float64(demanded)/p.demand - 1) / float64(T-1)
			p.growth += meanWeight * (min(max(g, 0), 1) - p.growth)
		}
	}
	p.measured = true
}

func pow(x float64, n int) float64 {
	r := 1.0
	for range n {
		r *= x
	}
	return r
}
