package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
)

// Sampling: how a token is chosen from a row of logits, reproducibly.
//
// Given the fp32 logits l[0..V) of the position p (the index the chosen
// token takes in the conversation, prompt included) and the options:
//
//  1. Temperature 0 or TopK 1: argmax(l), the first on ties — exactly the
//     greedy decoding this engine always did; nothing else is computed.
//  2. w_i = exp((l_i − max l) / T) in float64 (the softmax numerators;
//     normalising is left to the end, as every step below is invariant to
//     a common scale). Tokens with w_i = 0 are out.
//  3. The candidates sorted by w descending, ties by token id ascending: a
//     total order, so the nucleus is the same on every machine.
//  4. TopK > 0 keeps the first TopK.
//  5. 0 < TopP < 1 keeps the shortest prefix whose sum, in that order,
//     reaches TopP of the mass kept by step 4 (Σ_{j≤k} w_j ≥ TopP·Σ w,
//     the right side summed in token id order); all of it if rounding
//     leaves no such prefix.
//  6. MinP > 0 keeps the tokens with w_i ≥ MinP·w_max (w_max = w of the
//     first candidate, so the ratio is that of the probabilities).
//  7. u = uniform(Seed, p) in [0,1); the token is the first candidate k of
//     the kept ones, in order, with Σ_{j≤k} w_j > u·Σ w (inverse CDF, both
//     sums in that order; the last one if rounding leaves none).
//
// The random stream is counter-based: u depends on (Seed, p) alone, so no
// generator state exists to save or replay. The same seed draws the same
// u at a position whether the row came from a decode step, a speculative
// verify pass or a resumed job's prefill, and on any backend whose logits
// agree. uniform is SplitMix64 (Steele, Lea, Flood 2014) run as a hash:
// the state is mix64(Seed) advanced p+1 times by the golden gamma, output
// through SplitMix64's finaliser; its top 53 bits make a float64.

// Sampling is how Generate picks each token. The zero value is greedy.
type Sampling struct {
	// Temperature divides the logits; 0 is greedy (argmax).
	Temperature float64
	// TopP is the nucleus: the smallest set of most likely tokens whose
	// probability reaches it; 0 or 1 keeps every token.
	TopP float64
	// TopK keeps only the K most likely tokens; 0 keeps every token, 1 is
	// greedy.
	TopK int
	// MinP drops the tokens less likely than MinP times the most likely
	// one; 0 keeps every token.
	MinP float64
	// Seed keys the random stream with the token's position.
	Seed uint64
}

// modelCard is what K3's model card prescribes in every mode: temperature
// 1.0, top_p 0.95 (greedy decoding makes reasoning models loop).
func modelCard() Sampling { return Sampling{Temperature: 1, TopP: 0.95} }

// Greedy reports whether s picks the argmax (no randomness).
func (s Sampling) Greedy() bool { return s.Temperature == 0 || s.TopK == 1 }

// Check refuses options out of range, naming the field.
func (s Sampling) Check() error {
	switch {
	case !(s.Temperature >= 0 && s.Temperature <= 2):
		return fmt.Errorf("%w: temperature %g, want 0 to 2", ErrSampling, s.Temperature)
	case !(s.TopP >= 0 && s.TopP <= 1):
		return fmt.Errorf("%w: top_p %g, want 0 to 1", ErrSampling, s.TopP)
	case s.TopK < 0:
		return fmt.Errorf("%w: top_k %d, want 0 or more", ErrSampling, s.TopK)
	case !(s.MinP >= 0 && s.MinP <= 1):
		return fmt.Errorf("%w: min_p %g, want 0 to 1", ErrSampling, s.MinP)
	}
	return nil
}

// defaultSampling is Info.Sampling, the sampling of a request that names
// none: the model card's, with whichever of temperature, top_p, top_k and min_p dir's
// generation_config.json sets. Its do_sample is not read: it is
// transformers' own switch (off unless set), not the makers' prescription.
// A missing file gives the model card; a malformed one an ErrConfig.
func defaultSampling(dir string) (Sampling, error) {
	s := modelCard()
	b, err := os.ReadFile(filepath.Join(dir, "generation_config.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	var g struct {
		Temperature *float64 `json:"temperature"`
		TopP        *float64 `json:"top_p"`
		TopK        *int     `json:"top_k"`
		MinP        *float64 `json:"min_p"`
	}
	if err := json.Unmarshal(b, &g); err != nil {
		return s, fmt.Errorf("%w: generation_config.json: %v", ErrConfig, err)
	}
	if g.Temperature != nil {
		s.Temperature = *g.Temperature
	}
	if g.TopP != nil {
		s.TopP = *g.TopP
	}
	if g.TopK != nil {
		s.TopK = *g.TopK
	}
	if g.MinP != nil {
		s.MinP = *g.MinP
	}
	if err := s.Check(); err != nil {
		return s, fmt.Errorf("%w: generation_config.json: %v", ErrConfig, err)
	}
	return s, nil
}

// sampler holds one Generate call's options and scratch.
type sampler struct {
	opts Sampling
	w    []float64 // step 2's weights, by token id
	cand []candidate
}

type candidate struct {
	id int
	w  float64
}

// before is step 3's order: more likely first, then the lower id.
func before(a, b candidate) bool { return a.w > b.w || (a.w == b.w && a.id < b.id) }

// pick chooses the token at position pos from row.
func (z *sampler) pick(row []float32, pos int) int {
	if z.opts.Greedy() {
		return argmax(row)
	}
	return z.draw(row, uniform(z.opts.Seed, pos))
}

// draw is steps 2–7 for the uniform u. Sorting a K3 row of 163,840
// weights costs a hundred argmaxes, so only the candidates down to a
// threshold τ are sorted: they are a prefix of step 3's order, and when
// the kept tokens all lie in it the result is the full sort's, bit for
// bit (the sums that cross it, Σw for top_p, are taken over the whole row
// in id order). Otherwise τ drops and the prefix grows, down to every
// candidate.
func (z *sampler) draw(row []float32, u float64) int {
	o := z.opts
	hi := float64(row[argmax(row)])
	z.w = slices.Grow(z.w[:0], len(row))[:len(row)]
	all := 0.0 // Σw over every candidate, in id order
	for i, l := range row {
		w := math.Exp((float64(l) - hi) / o.Temperature)
		if !(w > 0) { // NaN too
			w = 0
		}
		z.w[i] = w
		all += w
	}
	if !(all > 0) { // non-finite logits: nothing to weigh
		return argmax(row)
	}
	nucleus := o.TopP > 0 && o.TopP < 1
	tau := 1e-4 // relative to w_max = exp(0) = 1
	switch {
	case o.MinP > 0:
		tau = min(tau, o.MinP) // nothing below MinP·w_max is kept
	case !nucleus && o.TopK == 0:
		tau = 0 // every candidate is kept
	}
	// lower is the next τ: for the nucleus, one under which less than
	// 1−TopP of the mass (≥ w_max = 1) can lie, V·τ < 1−TopP; then
	// smaller, and after three tries every candidate.
	lower := func(try int) float64 {
		if f := (1 - o.TopP) / (2 * float64(len(row))); nucleus && try == 0 && f < tau {
			return f
		}
		if try >= 2 {
			return 0
		}
		return tau * 1e-8
	}
	for try := 0; ; tau, try = lower(try), try+1 {
		z.cand = z.cand[:0]
		for i, w := range z.w {
			if w > 0 && w >= tau {
				z.cand = append(z.cand, candidate{i, w})
			}
		}
		slices.SortFunc(z.cand, func(a, b candidate) int {
			if before(a, b) {
				return -1
			}
			return 1 // never equal: the ids differ
		})
		c, every := z.cand, tau == 0
		total := all // Σw over step 4's set, in id order
		if o.TopK > 0 && o.TopK <= len(z.cand) {
			c, every = c[:o.TopK], true
			last := c[len(c)-1]
			total = 0
			for i, w := range z.w {
				if w > 0 && !before(last, candidate{i, w}) {
					total += w
				}
			}
		} else if o.TopK > 0 && !every {
			continue // fewer than TopK candidates above τ
		}
		if nucleus {
			sum, cut, k := 0.0, o.TopP*total, -1
			for j, x := range c {
				sum += x.w
				if sum >= cut {
					k = j
					break
				}
			}
			switch {
			case k >= 0:
				c = c[:k+1]
			case !every:
				continue // the nucleus reaches below τ
			} // else rounding kept Σ under the cut: all of step 4's set
		} else if !every && !(o.MinP > 0 && tau <= o.MinP) {
			continue // every candidate is kept: all must be sorted
		}
		return pickFrom(c, o.MinP, u)
	}
}

// pickFrom is steps 6 and 7 over the sorted candidates c.
func pickFrom(c []candidate, minP, u float64) int {
	if minP > 0 {
		floor := minP * c[0].w
		k := 1
		for k < len(c) && c[k].w >= floor {
			k++
		}
		c = c[:k]
	}
	total := 0.0
	for _, x := range c {
		total += x.w
	}
	r, sum := u*total, 0.0
	for _, x := range c {
		sum += x.w
		if sum > r {
			return x.id
		}
	}
	return c[len(c)-1].id
}

// uniform is the random stream: a float64 in [0,1) that depends only on
// (seed, pos) — the (pos+1)-th output of SplitMix64 started at
// mix64(seed).
func uniform(seed uint64, pos int) float64 {
	const gamma = 0x9e3779b97f4a7c15
	x := mix64(mix64(seed) + uint64(pos+1)*gamma)
	return float64(x>>11) * 0x1p-53
}

// mix64 is SplitMix64's finaliser (a bijection on 64 bits).
func mix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}
