package engine

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// The oracle drafter knows the answer: it proposes the target's own
// continuation, computed beforehand (a run without drafting), each token
// replaced by a wrong one with probability 1 − R. Which tokens are wrong
// depends only on (seed, position), so a run is repeatable and the
// acceptance is R whatever the depth. It measures what drafting saves at a
// chosen acceptance (bench slice --draft oracle:R) and proves verification
// exact at every acceptance; it reads no hidden states.

// WithAnswer is the oracle drafter d ("oracle:R") for a conversation whose
// tokens, from the first prompt token on, are seq (prompt and the target's
// answer): each proposal for conversation index q is seq[q], wrong with
// probability 1 − d.Rate.
func (d Draft) WithAnswer(seq []int, seed uint64) (Draft, error) {
	if d.Kind != "oracle" {
		return Draft{}, fmt.Errorf("--draft %s has no answer to draft: only the oracle does: %w", d.Kind, ErrDraft)
	}
	if !(d.Rate >= 0 && d.Rate <= 1) {
		return Draft{}, fmt.Errorf("the oracle's acceptance %g is not from 0 to 1: %w", d.Rate, ErrDraft)
	}
	d.src = &oracleSource{seq: append([]int(nil), seq...), rate: d.Rate, seed: seed}
	return d, nil
}

type oracleSource struct {
	seq  []int
	rate float64
	seed uint64
}

func (o *oracleSource) name() string { return "oracle:" + strconv.FormatFloat(o.rate, 'g', -1, 64) }

func (o *oracleSource) newDrafter(m *Model) drafter {
	return &oracle{src: o, vocab: m.cfg.Vocab}
}

// oracleSalt keeps the oracle's draws apart from the sampler's, which are
// keyed by the same positions.
const oracleSalt = 0x6f7261636c65

type oracle struct {
	src   *oracleSource
	vocab int
	pos   int // positions observed
}

func (o *oracle) taps() []int              { return nil }
func (o *oracle) observe(int, [][]float32) { o.pos++ }
func (o *oracle) reset()                   { o.pos = 0 }

func (o *oracle) propose(ctx context.Context, prefix []int, k int) ([]int, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []int
	for q := o.pos + len(prefix); q < len(o.src.seq) && len(out) < k; q++ {
		tok := o.src.seq[q]
		if uniform(o.src.seed^oracleSalt, q) >= o.src.rate && o.vocab > 1 {
			// Wrong: any other token, the same one every run.
			tok = (tok + 1 + int(mix64(o.src.seed+uint64(q))%uint64(o.vocab-1))) % o.vocab
		}
		out = append(out, tok)
	}
	return out, nil
}

// ParseDraft reads a --draft value: "ngram" (the default, also ""),
// "off" (no speculation) or "oracle:R" (the oracle at acceptance R,
// 0 ≤ R ≤ 1, with n-gram off so the acceptance is R's; WithAnswer makes
// it).
func ParseDraft(s string) (Draft, error) {
	switch s {
	case "", "ngram":
		return Draft{Kind: "ngram"}, nil
	case "off":
		return Draft{Kind: "off"}, nil
	}
	if r, ok := strings.CutPrefix(s, "oracle:"); ok {
		v, err := strconv.ParseFloat(r, 64)
		if err != nil || !(v >= 0 && v <= 1) {
			return Draft{}, fmt.Errorf("--draft %q: the oracle's acceptance must be a number from 0 to 1: %w", s, ErrDraft)
		}
		return Draft{Kind: "oracle", Rate: v}, nil
	}
	return Draft{}, fmt.Errorf("--draft %q: want ngram, off or oracle:R: %w", s, ErrDraft)
}
