package downloader

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"github.com/deltafin/deltafin/checkpoint"
)

// maxTraceLine bounds one JSON line of a router trace or heat file.
const maxTraceLine = 1 << 20

// traceLine is one line of a router trace (written by the engine with
// --trace): the experts selected for one token in one MoE layer.
type traceLine struct {
	Token   *int  `json:"token"`
	Layer   *int  `json:"layer"`
	Experts []int `json:"experts"`
}

// ReadTrace adds every (layer, expert) routing of a router trace to counts
// and returns how many routings it read. A line that is not a trace record
// is an error naming the line.
func ReadTrace(r io.Reader, name string, counts map[checkpoint.ExpertID]float64) (int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxTraceLine)
	routes := 0
	for line := 1; sc.Scan(); line++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var tl traceLine
		if err := json.Unmarshal(sc.Bytes(), &tl); err != nil {
			return routes, fmt.Errorf("downloader: trace %s line %d: %v", name, line, err)
		}
		if tl.Token == nil || tl.Layer == nil || *tl.Layer < 0 {
			return routes, fmt.Errorf("downloader: trace %s line %d: want {\"token\":int,\"layer\":int,\"experts\":[int...]}", name, line)
		}
		for _, e := range tl.Experts {
			if e < 0 {
				return routes, fmt.Errorf("downloader: trace %s line %d: negative expert %d", name, line, e)
			}
			counts[checkpoint.ExpertID{Layer: *tl.Layer, Expert: e}]++
			routes++
		}
	}
	if err := sc.Err(); err != nil {
		return routes, fmt.Errorf("downloader: trace %s: %w", name, err)
	}
	return routes, nil
}

// heatLine is one line of a heat histogram file: the accumulated heat of
// one expert (JSON lines, the same shape as a trace line).
type heatLine struct {
	Layer  *int     `json:"layer"`
	Expert *int     `json:"expert"`
	Heat   *float64 `json:"heat"`
}

// ReadHeat adds a heat histogram (one {"layer","expert","heat"} JSON object
// per line) to counts: a heat of h weighs as h observed routings.
func ReadHeat(r io.Reader, name string, counts map[checkpoint.ExpertID]float64) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxTraceLine)
	for line := 1; sc.Scan(); line++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var hl heatLine
		if err := json.Unmarshal(sc.Bytes(), &hl); err != nil {
			return fmt.Errorf("downloader: heat %s line %d: %v", name, line, err)
		}
		if hl.Layer == nil || hl.Expert == nil || hl.Heat == nil || *hl.Layer < 0 || *hl.Expert < 0 || *hl.Heat < 0 {
			return fmt.Errorf("downloader: heat %s line %d: want {\"layer\":int,\"expert\":int,\"heat\":number>=0}", name, line)
		}
		counts[checkpoint.ExpertID{Layer: *hl.Layer, Expert: *hl.Expert}] += *hl.Heat
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("downloader: heat %s: %w", name, err)
	}
	return nil
}

// A Candidate is a missing expert ranked for warming.
type Candidate struct {
	Expert
	Score float64 // routings observed plus heat
}

// RankMissing returns the experts of the plan that were observed (score > 0)
// and are not fully present, by score (descending), then layer, then expert.
// Observations of experts the plan does not have are counted in unknown.
func (m *Mirror) RankMissing(p *Plan, counts map[checkpoint.ExpertID]float64) (ranked []Candidate, unknown int, err error) {
	known := map[checkpoint.ExpertID]Expert{}
	for _, e := range p.Experts() {
		known[e.ExpertID] = e
	}
	for id, score := range counts {
		e, ok := known[id]
		if !ok {
			unknown++
			continue
		}
		if score <= 0 {
			continue
		}
		n, err := m.Present(e.File, e.Start, e.Len())
		if err != nil {
			return nil, 0, err
		}
		if n < e.Len() {
			ranked = append(ranked, Candidate{Expert: e, Score: score})
		}
	}
	sort.Slice(ranked, func(i, j int) bool {
		a, b := ranked[i], ranked[j]
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		if a.Layer != b.Layer {
			return a.Layer < b.Layer
		}
		return a.Expert.Expert < b.Expert.Expert
	})
	return ranked, unknown, nil
}

// ExpertsCached counts the plan's experts that are fully present.
func (m *Mirror) ExpertsCached(p *Plan) (cached, total int, err error) {
	for _, e := range p.Experts() {
		n, err := m.Present(e.File, e.Start, e.Len())
		if err != nil {
			return 0, 0, err
		}
		total++
		if n == e.Len() {
			cached++
		}
	}
	return cached, total, nil
}
