package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/time/rate"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/drives"
	"github.com/deltafin/deltafin/experts"
)

// The multi-drive measurement of `bench slice --drive-gbps`: the engine's
// read scheduler over expert drives whose bandwidths are set, without
// owning several SSDs. One drive directory in the slice holds copies of
// the first DriveExperts experts of each layer (page-cached after the
// copy); each simulated drive reads that file through the page cache and
// a token bucket of its own rate, so the drives' limits, not the disk,
// bound the reads, and the scheduler's share of their sum is what is left.

// DriveBenchOptions configures BenchDrives.
type DriveBenchOptions struct {
	Dir    string    // the slice
	Layers []int     // its MoE layers
	GBps   []float64 // each simulated drive's limit
	// Experts is how many experts of each layer the drives hold and the
	// routes pick from (default 32: 0.56 GB per layer, page-cached).
	Experts int
	// Readers is each drive's reads in flight (default 4).
	Readers int
	// Burst is each token bucket's depth (default 16 MiB: a few chunks,
	// so that a reader delayed by the CPU does not lose the drive's
	// tokens; 16 MiB per drive is 1% of a 1 GB/s drive's bytes over 1.6 s).
	Burst  int
	Tokens int // measured tokens (default 8), after 2 of warm-up
	// Rounds is how many times the drives and the control alternate
	// (default 1).
	Rounds int
	Seed   uint64
	Log    func(format string, args ...any)
}

// DriveBenchResult is the measurement.
type DriveBenchResult struct {
	LimitGBps float64 `json:"limit_gb_per_s"` // the limits' sum
	GBps      float64 `json:"gb_per_s"`       // expert bytes read ÷ elapsed
	Ratio     float64 `json:"ratio"`          // GBps ÷ LimitGBps
	// ControlGBps is one simulated drive at LimitGBps measured in the
	// same run (the most this machine's cores deliver through this path),
	// ControlRatio GBps ÷ it.
	ControlGBps  float64 `json:"control_gb_per_s"`
	ControlRatio float64 `json:"control_ratio"`
	// Rounds is how many times the drives ran (this is the median round),
	// RoundRatios every round's Ratio, lowest control ratio first.
	Rounds        int          `json:"rounds"`
	RoundRatios   []float64    `json:"round_ratios"`
	MirrorBytes   int64        `json:"mirror_bytes"` // read from the slice itself (0: the drives served all)
	SecondsPerTok float64      `json:"s_per_token"`
	Drives        []DriveBench `json:"drives"`
}

// DriveBench is one simulated drive's part.
type DriveBench struct {
	Name      string  `json:"name"`
	LimitGBps float64 `json:"limit_gb_per_s"`
	GBps      float64 `json:"gb_per_s"`    // its bytes ÷ elapsed
	Busy      float64 `json:"busy"`        // share of the time with a read in flight
	Starved   float64 `json:"idle_queued"` // share of the time idle while a read it holds was queued
	Share     float64 `json:"byte_share"`  // of all bytes read
	Fair      float64 `json:"limit_share"` // its limit's share of the sum
	Readers   int     `json:"reads_in_flight"`
	Corrupt   int64   `json:"checksum_failures"`
	Failed    bool    `json:"failed,omitempty"`
	Bytes     int64   `json:"bytes"`
	BusyTime  float64 `json:"busy_s"`
	IdleTime  float64 `json:"idle_s"`
	StarvedTm float64 `json:"idle_queued_s"`
}

// limitedDrive is a simulated drive: the shared copies read through the
// page cache at a set rate.
type limitedDrive struct {
	d       *drives.Drive
	name    string
	readers int
	src     limitedSource
}

func (l *limitedDrive) Name() string             { return l.name }
func (l *limitedDrive) Readers() int             { return l.readers }
func (l *limitedDrive) Corrupt(id ckpt.ExpertID) { l.d.Corrupt(id) }
func (l *limitedDrive) Replica(id ckpt.ExpertID) (experts.Replica, bool) {
	r, ok := l.d.Replica(id)
	r.Source = l.src
	return r, ok
}

// limitedSource is a token bucket in front of a Source: each read waits
// for its bytes' worth of tokens.
type limitedSource struct {
	ckpt.Source
	lim *rate.Limiter
}

func (s limitedSource) ReadAt(ctx context.Context, p []byte, off int64) error {
	for rest := len(p); rest > 0; {
		n := min(rest, s.lim.Burst())
		if err := s.lim.WaitN(ctx, n); err != nil {
			return err
		}
		rest -= n
	}
	return s.Source.ReadAt(ctx, p, off)
}

// BenchDrives copies (once) the experts the routes use to a drive in the
// slice, then decodes through a cacheless store over len(GBps) simulated
// drives, the slice itself read only for what no drive holds: per token
// and layer 16 random experts of the held ones, the next layer's route
// prefetched (as the engine's lookahead does), no compute. It reports the
// aggregate against the limits' sum and each drive's busy and
// idle-while-queued time.
func BenchDrives(ctx context.Context, o DriveBenchOptions) (DriveBenchResult, error) {
	if o.Experts <= 0 {
		o.Experts = 32
	}
	if o.Readers <= 0 {
		o.Readers = 4
	}
	if o.Tokens <= 0 {
		o.Tokens = 8
	}
	if o.Burst <= 0 {
		o.Burst = 16 << 20
	}
	logf := o.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	var res DriveBenchResult
	if len(o.GBps) == 0 {
		return res, fmt.Errorf("bench: no drive bandwidths")
	}
	m, err := drives.OpenMirror(ctx, o.Dir, nil)
	if err != nil {
		return res, err
	}
	heat := map[ckpt.ExpertID]float32{}
	for _, l := range o.Layers {
		for e := range o.Experts {
			heat[ckpt.ExpertID{Layer: l, Expert: e}] = 1
		}
	}
	path := filepath.Join(o.Dir, "bench-drive")
	d, err := drives.Open(path, drives.Layout(m.Spans))
	if err != nil {
		return res, err
	}
	defer d.Close()
	start := time.Now()
	fill, err := d.Fill(ctx, m, drives.FillOptions{Share: float64(len(heat)) / float64(len(m.Spans)), Heat: heat})
	if err != nil {
		return res, err
	}
	logf("drives: %d experts copied to %s (%.2f GB in %.1f s); %d held", fill.Copied, path, float64(fill.Bytes)/1e9, time.Since(start).Seconds(), fill.Held)
	data := filepath.Join(path, drives.Sub, "experts.bin")
	if err := warmPageCache(data); err != nil {
		return res, err
	}
	srcs := make([]*ckpt.FileSource, len(o.GBps))
	for i := range srcs {
		src, err := ckpt.OpenFile(ctx, data) // buffered: the page cache, not the disk
		if err != nil {
			return res, err
		}
		srcs[i] = src.(*ckpt.FileSource)
		defer srcs[i].Close()
	}
	for _, gbps := range o.GBps {
		res.LimitGBps += gbps
	}
	// The control: one drive at the limits' sum, the same bytes through
	// the same page cache and checksums on the same cores. The cores'
	// share drifts with other tenants, so the control and the drives
	// alternate Rounds times; the result is the round with the median
	// ratio of the drives to the controls on either side of them.
	rounds := max(o.Rounds, 1)
	ctl, err := o.measure(ctx, d, srcs[:1], []float64{res.LimitGBps})
	if err != nil {
		return res, err
	}
	var runs []DriveBenchResult
	for range rounds {
		r, err := o.measure(ctx, d, srcs, o.GBps)
		if err != nil {
			return res, err
		}
		after, err := o.measure(ctx, d, srcs[:1], []float64{res.LimitGBps})
		if err != nil {
			return res, err
		}
		r.LimitGBps, r.ControlGBps = res.LimitGBps, max(ctl.GBps, after.GBps)
		r.Ratio = r.GBps / r.LimitGBps
		r.ControlRatio = r.GBps / r.ControlGBps
		r.Rounds = rounds
		runs = append(runs, r)
		ctl = after
	}
	slices.SortFunc(runs, func(a, b DriveBenchResult) int { return cmp.Compare(a.ControlRatio, b.ControlRatio) })
	for _, r := range runs {
		runs[len(runs)/2].RoundRatios = append(runs[len(runs)/2].RoundRatios, r.Ratio)
	}
	return runs[len(runs)/2], nil
}

// measure decodes through simulated drives of the limits given over srcs
// (one per drive).
func (o DriveBenchOptions) measure(ctx context.Context, d *drives.Drive, srcs []*ckpt.FileSource, limits []float64) (DriveBenchResult, error) {
	var res DriveBenchResult
	var sims []experts.Drive
	var sum float64
	for i, gbps := range limits {
		lim := rate.NewLimiter(rate.Limit(gbps*1e9), o.Burst)
		sims = append(sims, &limitedDrive{d: d, name: fmt.Sprintf("drive%d (%.2g GB/s)", i+1, gbps), readers: o.Readers, src: limitedSource{srcs[i], lim}})
		sum += gbps
	}
	p, err := openProbe(ctx, o.Dir, probeOptions{Drives: sims, MirrorLast: true})
	if err != nil {
		return res, err
	}
	defer p.Close()
	rng := rand.New(rand.NewPCG(o.Seed, 0xD21E))
	type step struct {
		layer int
		ids   []int
	}
	total := (2 + o.Tokens) * len(o.Layers)
	route := make([]step, total+1)
	for i := range route {
		route[i] = step{o.Layers[i%len(o.Layers)], randomIDs(rng, o.Experts, k3TopK)}
	}
	var base experts.Stats
	var t0 time.Time
	for i := range total {
		if i == 2*len(o.Layers) {
			base, t0 = p.Stats(), time.Now()
		}
		if err := p.Step(ctx, route[i].layer, route[i].ids, route[i+1].layer, route[i+1].ids, false); err != nil {
			return res, err
		}
	}
	el := time.Since(t0).Seconds()
	st := p.Stats().Sub(base)
	res.SecondsPerTok = el / float64(o.Tokens)
	res.MirrorBytes = st.Drives[0].Bytes
	var all int64
	for _, ds := range st.Drives {
		all += ds.Bytes
	}
	res.GBps = float64(all) / el / 1e9
	for i, ds := range st.Drives[1:] {
		res.Drives = append(res.Drives, DriveBench{
			Name: ds.Name, LimitGBps: limits[i], GBps: float64(ds.Bytes) / el / 1e9,
			Busy: ds.Busy.Seconds() / el, Starved: ds.Starved.Seconds() / el,
			Share: float64(ds.Bytes) / float64(max(all, 1)), Fair: limits[i] / sum,
			Readers: ds.Readers, Corrupt: ds.Corrupt, Failed: ds.Failed, Bytes: ds.Bytes,
			BusyTime: ds.Busy.Seconds(), IdleTime: ds.Idle.Seconds(), StarvedTm: ds.Starved.Seconds(),
		})
	}
	return res, nil
}

// warmPageCache reads path once through the page cache.
func warmPageCache(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	defer f.Close()
	_, err = io.Copy(io.Discard, f)
	return err
}
