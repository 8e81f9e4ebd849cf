package downloader

import (
	"context"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/checkpoint/safetensors"
)

// Kind says what a mirrored file is for.
type Kind int

const (
	// Metadata files (config, tokenizer) are small and always fetched whole.
	Metadata Kind = iota
	// Shard files hold tensors: a spine part and routed experts.
	Shard
)

// An Expert is the contiguous byte span of one routed expert's six tensors
// (w1, w2, w3 packed and scale) in its shard (checkpoint.IndexExperts).
type Expert struct {
	checkpoint.ExpertID
	File string
	Range
}

// A File is one mirrored file and, for shards, how its bytes divide.
type File struct {
	Entry
	Kind Kind
	// Spine is the header and every tensor that is not a routed expert,
	// merged into runs: what stream mode downloads.
	Spine []Range
	// Experts are the routed expert spans, in file order.
	Experts []Expert
}

// A Plan is the repository at its revision, divided into what each mode needs.
type Plan struct {
	Repo, Revision string
	Files          []File
}

// Experts returns every routed expert of the plan, by layer then expert.
func (p *Plan) Experts() []Expert {
	var out []Expert
	for _, f := range p.Files {
		out = append(out, f.Experts...)
	}
	slices.SortFunc(out, func(a, b Expert) int { return a.ExpertID.Compare(b.ExpertID) })
	return out
}

// isMetadata selects the inert files the engine reads: configuration and
// tokenizer. Code (*.py) and documents are never fetched.
func isMetadata(p string) bool {
	if strings.Contains(p, "/") {
		return false
	}
	switch path.Ext(p) {
	case ".json", ".model":
		return true
	}
	return p == "LICENSE"
}

func isShard(p string) bool { return !strings.Contains(p, "/") && strings.HasSuffix(p, ".safetensors") }

// Plan lists the repository (or reuses the saved listing), reads every
// shard's safetensors header with range requests into the mirror, and
// divides each shard into spine and expert spans.
func (m *Mirror) Plan(ctx context.Context) (*Plan, error) {
	if !m.hasManifest() {
		m.prog.phase(PhasePlan, "listing "+m.opts.Repo)
		all, err := m.list(ctx)
		if err != nil {
			return nil, err
		}
		var keep []Entry
		for _, e := range all {
			if isMetadata(e.Path) || isShard(e.Path) {
				keep = append(keep, e)
			}
		}
		if len(keep) == 0 {
			return nil, fmt.Errorf("%w: %s@%s has no config or safetensors files", ErrLayout, m.opts.Repo, shortRev(m.opts.Revision))
		}
		sort.Slice(keep, func(i, j int) bool { return keep[i].Path < keep[j].Path })
		if err := m.saveManifest(keep); err != nil {
			return nil, err
		}
		m.setEntries(keep)
	}
	m.mu.Lock()
	entries := make([]Entry, 0, len(m.entries))
	for _, e := range m.entries {
		entries = append(entries, e)
	}
	m.mu.Unlock()
	sort.Slice(entries, func(i, j int) bool { return entries[i].Path < entries[j].Path })

	if m.opts.Repair {
		var err error
		m.repairOnce.Do(func() { err = m.Repair(ctx) })
		if err != nil {
			return nil, err
		}
	}
	p := &Plan{Repo: m.opts.Repo, Revision: m.opts.Revision, Files: make([]File, len(entries))}
	m.prog.phase(PhasePlan, "reading shard headers")
	// K3 has 96 shards: read their headers Jobs at a time.
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(m.opts.Jobs)
	for i, e := range entries {
		p.Files[i] = File{Entry: e, Kind: Metadata}
		if isShard(e.Path) {
			p.Files[i].Kind = Shard
			g.Go(func() error { return m.planShard(gctx, &p.Files[i]) })
		}
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return p, nil
}

// planShard reads the shard's header. A header that does not parse, or
// whose layout is wrong, may have been damaged in transit (the file's
// digest can only be checked when it is complete): healHeader fetches its
// bytes once more before the shard is refused.
func (m *Mirror) planShard(ctx context.Context, f *File) error {
	err := m.readShardHeader(ctx, f)
	if err == nil || !headerFailed(err) {
		return err
	}
	return m.healHeader(ctx, f, err)
}

func (m *Mirror) readShardHeader(ctx context.Context, f *File) error {
	if f.Size < 8 {
		return fmt.Errorf("%w: %s: %d bytes is too short for a safetensors file", ErrLayout, f.Path, f.Size)
	}
	var prefix [8]byte
	if err := m.ReadAt(ctx, f.Path, prefix[:], 0); err != nil {
		return err
	}
	n, err := safetensors.HeaderLength(prefix[:], f.Size)
	if err != nil {
		return fmt.Errorf("downloader: %s: %w", f.Path, err)
	}
	buf := make([]byte, n)
	if err := m.ReadAt(ctx, f.Path, buf, 8); err != nil {
		return err
	}
	h, err := safetensors.Parse(buf, f.Size)
	if err != nil {
		return fmt.Errorf("downloader: %s: %w", f.Path, err)
	}
	spans, err := checkpoint.IndexExperts(f.Path, h)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrLayout, err)
	}
	spine := rangeSet{}.add(Range{0, h.DataStart})
	for _, t := range h.Tensors {
		if _, _, expert := checkpoint.ParseExpertName(t.Name); !expert {
			spine = spine.add(Range{t.Offset, t.End()})
		}
	}
	for id, sp := range spans {
		f.Experts = append(f.Experts, Expert{ExpertID: id, File: f.Path, Range: Range{sp.Offset, sp.End()}})
	}
	sort.Slice(f.Experts, func(i, j int) bool { return f.Experts[i].Start < f.Experts[j].Start })
	f.Spine = spine
	return nil
}

// Mode is how much of the model an install holds.
type Mode string

const (
	// Stream: metadata and spine; experts arrive on demand.
	Stream Mode = "stream"
	// Full: every byte of every file.
	Full Mode = "full"
	// Auto picks Full or Stream by free disk (see Choose).
	Auto Mode = "auto"
)

// A Work item is one range of one file to make present.
type Work struct {
	File string
	Range
}

// Work returns the ranges a mode needs (Stream or Full).
func (p *Plan) Work(mode Mode) []Work {
	var out []Work
	for _, f := range p.Files {
		switch {
		case f.Kind == Metadata || mode == Full:
			out = append(out, Work{f.Path, Range{0, f.Size}})
		default:
			for _, r := range f.Spine {
				out = append(out, Work{f.Path, r})
			}
		}
	}
	return out
}

// ExpertWork returns the spans of the experts whose layer is selected (nil
// selects every layer).
func (p *Plan) ExpertWork(layers map[int]bool) []Work {
	var out []Work
	for _, f := range p.Files {
		for _, e := range f.Experts {
			if layers == nil || layers[e.Layer] {
				out = append(out, Work{f.Path, e.Range})
			}
		}
	}
	return out
}

// Totals is the size of a set of work and how much of it is on disk.
type Totals struct {
	Total, Present int64
}

// Missing returns the bytes still to download.
func (t Totals) Missing() int64 { return t.Total - t.Present }

// Totals measures work against the mirror's presence maps.
func (m *Mirror) Totals(work []Work) (Totals, error) {
	var t Totals
	for _, w := range work {
		n, err := m.Present(w.File, w.Start, w.Len())
		if err != nil {
			return t, err
		}
		t.Total += w.Len()
		t.Present += n
	}
	return t, nil
}
