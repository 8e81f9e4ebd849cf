package bench

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"time"
)

// choice is one (layer, expert) the router chose.
type choice struct{ layer, expert int }

// replayPrefillReads reads the experts a prefill chose, each once, through
// a cold cacheless store with the page cache bypassed and no compute (by
// layer, each layer's union in ascending ids, a decode token's worth at a
// time with the next group prefetched; the prefill reads the same set in
// the order its chunks name them) and
// returns the seconds it took: the disk's floor for that prompt's time to
// first token, measured in the same run.
func replayPrefillReads(ctx context.Context, dir string, chosen map[choice]bool) (float64, error) {
	p, err := openProbe(ctx, dir, probeOptions{Mode: "direct"})
	if err != nil {
		return 0, err
	}
	defer p.Close()
	type group struct {
		layer int
		ids   []int
	}
	var groups []group
	all := slices.SortedFunc(maps.Keys(chosen), func(a, b choice) int {
		return cmp.Or(cmp.Compare(a.layer, b.layer), cmp.Compare(a.expert, b.expert))
	})
	for _, c := range all {
		if k := len(groups) - 1; k >= 0 && groups[k].layer == c.layer && len(groups[k].ids) < k3TopK {
			groups[k].ids = append(groups[k].ids, c.expert)
			continue
		}
		groups = append(groups, group{c.layer, []int{c.expert}})
	}
	start := time.Now()
	for i, g := range groups {
		next := group{layer: -1}
		if i+1 < len(groups) {
			next = groups[i+1]
		}
		if err := p.Step(ctx, g.layer, g.ids, next.layer, next.ids, false); err != nil {
			return 0, err
		}
	}
	return time.Since(start).Seconds(), nil
}
