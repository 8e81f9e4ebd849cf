package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
)

// The expert cache's hit rate on a recorded router trace (`deltafin bench
// heat`): the trace's selections, token by token, through an expert store
// over the model the trace was recorded on, with a cache of a given size
// ranked by the heat histogram halved every HalfLife tokens (or
// cumulative), so the decay can be chosen by measurement.

// HeatRun is one cache size and half-life.
type HeatRun struct {
	CacheExperts int     `json:"cache_experts"`
	HalfLife     int     `json:"half_life_tokens"` // < 0: cumulative counts
	Demanded     int64   `json:"demanded"`
	Hits         int64   `json:"cache_hits"`
	HitRate      float64 `json:"hit_rate"`
}

// traceLine is one line of a router trace (engine's --trace format).
type traceLine struct {
	Token   int   `json:"token"`
	Layer   int   `json:"layer"`
	Experts []int `json:"experts"`
}

// ReadTrace reads a router trace written by --trace, in file order.
func ReadTrace(path string) ([]traceLine, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("bench: trace: %w", err)
	}
	defer f.Close()
	var out []traceLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		var t traceLine
		if err := json.Unmarshal(sc.Bytes(), &t); err != nil {
			return nil, fmt.Errorf("bench: trace %s line %d: %v", path, n, err)
		}
		out = append(out, t)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("bench: trace %s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("bench: trace %s is empty", path)
	}
	return out, nil
}

// TraceHitRates replays the traces at paths, one after the other (as one
// conversation turning to another subject), through the checkpoint in dir
// once per cache size and half-life.
func TraceHitRates(ctx context.Context, dir string, paths []string, caches, halfLives []int) ([]HeatRun, error) {
	var trace []traceLine
	for _, p := range paths {
		t, err := ReadTrace(p)
		if err != nil {
			return nil, err
		}
		trace = append(trace, t...)
	}
	var out []HeatRun
	for _, c := range caches {
		for _, h := range halfLives {
			r, err := replay(ctx, dir, trace, c, h)
			if err != nil {
				return nil, err
			}
			out = append(out, r)
		}
	}
	return out, nil
}

func replay(ctx context.Context, dir string, trace []traceLine, cache, halfLife int) (HeatRun, error) {
	p, err := openProbe(ctx, dir, probeOptions{Mode: "buffered", CacheExperts: cache, HeatHalfLife: halfLife})
	if err != nil {
		return HeatRun{}, err
	}
	defer p.Close()
	for _, t := range trace {
		if err := p.Read(ctx, t.Layer, slices.Clone(t.Experts)); err != nil {
			return HeatRun{}, fmt.Errorf("bench: trace token %d layer %d: %w", t.Token, t.Layer, err)
		}
	}
	st := p.Stats()
	r := HeatRun{CacheExperts: cache, HalfLife: halfLife, Demanded: st.Demanded(), Hits: st.CacheHits}
	r.HitRate = float64(r.Hits) / float64(max(r.Demanded, 1))
	return r, nil
}
