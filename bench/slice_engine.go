package bench

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/engine"
	"github.com/deltafin/deltafin/experts"
	"github.com/deltafin/deltafin/internal/directio"
	"github.com/deltafin/deltafin/kernels"
)

// maxEngineWarmup bounds the decode steps an engine run spends filling
// its expert cache before it measures.
const maxEngineWarmup = 40

// decodeRun is one engine decode's drafting: none (n-gram speculation as
// the engine does by default), T = 1 (noSpec, no drafter) or a drafter.
// warm > 0 fixes the warmup tokens (the drafting runs measure the same
// tokens as the T = 1 run they compare with); extra tokens are decoded
// after the measured ones (the T = 1 run's answer then covers the drafts
// of the last measured passes).
type decodeRun struct {
	noSpec      bool
	draft       engine.Draft
	warm, extra int
}

// engineDecode runs the real forward pass over the slice (it is a K3-shaped
// checkpoint with its own config) under the budget plan, and measures the
// decode steps after the warmup ones (at least o.Warmup, and until the
// expert cache is full): the router now chooses the experts. The heat
// histogram persists at heatPath between the runs. It also returns the
// conversation (prompt and answer) and the warmup tokens.
func (o SliceBenchOptions) engineDecode(ctx context.Context, plan experts.BudgetPlan, heatPath, run string, dr decodeRun) (DecodeResult, []int, int, error) {
	runtime.GC() // the earlier runs' buffers, collected before this one
	m, err := engine.Open(ctx, o.Dir, engine.Options{Backend: o.Backend, OpenSource: o.open, NoSpec: dr.noSpec, Stream: &engine.StreamOptions{Plan: &plan, HeatPath: heatPath}})
	if err != nil {
		return DecodeResult{}, nil, 0, err
	}
	defer m.Close()
	s := m.NewSession()
	if err := s.SetDraft(dr.draft); err != nil {
		return DecodeResult{}, nil, 0, err
	}
	var base, end engine.Stats
	var spec0, spec1 engine.SpecStats
	var start time.Time
	var el float64
	stop := func() {}
	n, first := 0, -1
	// K3's <|im_user|> (the last id of a smaller vocabulary), then 1, 2, 3.
	prompt := []int{min(163584, m.Info().VocabSize-1), 1, 2, 3}
	_, err = s.Generate(ctx, prompt, engine.GenerateOptions{MaxNew: maxEngineWarmup + o.Tokens + dr.extra + 1}, func(int) error {
		// The first token comes from the prefill; steps start after it,
		// once the expert cache is full (steady state: a filling cache
		// costs page faults on its new buffers that a full one does not).
		n++
		warm := n > o.Warmup && (m.Stats().CachedExperts >= plan.CacheExperts || n > maxEngineWarmup)
		if dr.warm > 0 {
			warm = n >= dr.warm
		}
		if first < 0 && warm {
			if o.Profile != nil {
				stop = o.Profile(run)
			}
			first, base, spec0, start = n, m.Stats(), s.SpecStats(), time.Now()
		}
		if first >= 0 && n == first+o.Tokens {
			el, end, spec1 = time.Since(start).Seconds(), m.Stats(), s.SpecStats()
			stop()
			stop = func() {}
		}
		if first >= 0 && n == first+o.Tokens+dr.extra {
			return engine.ErrStopped
		}
		return nil
	})
	stop()
	if err != nil {
		return DecodeResult{}, nil, 0, err
	}
	st := end.Sub(base)
	steps := float64(o.Tokens)
	demanded := float64(st.Demanded())
	d := DecodeResult{
		Compute:            true,
		SecondsPerToken:    el / steps,
		DiskBytesPerToken:  float64(st.DiskBytes()) / steps,
		SpineBytesPerToken: float64(st.SpineBytes) / steps,
		DiskIdle:           st.DiskIdle.Seconds() / el,
		MeanInFlight:       st.ReadsInFlight / el,
		CacheHitRate:       float64(st.CacheHits) / demanded,
		PrefetchHitRate:    float64(st.PrefetchHits) / demanded,
		PrefetchWasted:     float64(st.PrefetchWasted) / steps,
	}
	d.DiskGBPerSecond = d.DiskBytesPerToken / d.SecondsPerToken / 1e9
	if m.Plan().PinnedLayers < m.Info().Layers && dr.draft.Name() == "" && !dr.noSpec {
		if d.IOOnlyGBPerSecond, err = ioOnlyRate(ctx, o.Dir, m.Plan().PinnedLayers, max(o.Tokens/2, 2), rand.New(rand.NewPCG(o.Seed, 0x10))); err != nil {
			return d, nil, 0, err
		}
	}
	sp := spec1.Sub(spec0)
	d.SpecPasses, d.SpecAcceptRate, d.TokensPerPass = sp.Passes, sp.AcceptRate(), sp.TokensPerPass()
	d.TargetPasses, d.Drafted, d.Accepted = sp.TargetPasses(), sp.Drafted, sp.Accepted
	return d, s.Tokens(), first, nil
}

// PrefillResult is one prompt run over the slice with a cold expert store.
type PrefillResult struct {
	Tokens int `json:"tokens"`
	// TimeToFirstToken is the prompt's pass plus lm_head, in seconds.
	TimeToFirstToken float64 `json:"ttft_s"`
	// DistinctExperts is the number of (layer, expert) pairs the router
	// chose over the whole prompt; TokenMajorExperts what a token-at-a-time
	// prefill would acquire (tokens × top-k per layer).
	DistinctExperts   int   `json:"distinct_experts"`
	TokenMajorExperts int   `json:"token_major_experts"`
	DiskBytes         int64 `json:"disk_bytes"`
	// ReadAmplification is expert bytes read ÷ bytes of the distinct
	// experts (target ≤ 1.05); TokenMajorAmplification the same for a
	// token-at-a-time prefill without a cache.
	ReadAmplification       float64 `json:"read_amplification"`
	TokenMajorAmplification float64 `json:"token_major_amplification"`
	// ReadsAlone is the time to read the prompt's distinct experts once,
	// replayed right after through a cold store without compute, in
	// ascending ids per layer (slice_prefill.go); TTFTRatio is TimeToFirstToken ÷
	// it (target ≤ 1.3). ExpertWait is the part of the prefill spent
	// waiting for expert bytes, Compute the rest (TimeToFirstToken −
	// ExpertWait: the prefill's compute, reads hidden), DiskIdle the part
	// of the pass with no read in flight (from its start: the time before
	// the first expert was named is in it).
	ReadsAlone float64 `json:"reads_alone_s"`
	TTFTRatio  float64 `json:"ttft_ratio"`
	ExpertWait float64 `json:"expert_wait_s"`
	Compute    float64 `json:"compute_s"`
	DiskIdle   float64 `json:"disk_idle_s"`
	// Open is the model's open (engine.OpenStats): index and validation,
	// then the pinned spine read and checked; PinnedGBps its rate.
	Open      engine.OpenStats `json:"open"`
	OpenTotal float64          `json:"open_s"`
	// Preload is how long the pinned spine's copy to a GPU that keeps it
	// (engine.Model.WaitPreload) went on after the open; the prompt starts
	// once it is done, as a user's does once the app has loaded the model,
	// so the TTFT is a ready model's. 0 without such a GPU.
	Preload    float64 `json:"preload_s"`
	PinnedGBps float64 `json:"pinned_gb_per_s"`
	// Routes is where the prompt's batched products and attention ran and
	// for how long (kernels.Routes), on a split backend ("auto" with a
	// GPU); absent on the CPU alone.
	Routes *kernels.RouteStats `json:"routes,omitempty"`
	// Warm is the same prompt once more through a new session of the same
	// model, after the pass above (SliceBenchOptions.PrefillWarm); nil
	// without it.
	Warm *WarmPrefill `json:"warm,omitempty"`
}

// WarmPrefill is a prompt run again with the experts its first pass read
// still in the model's expert cache, as after the app warmed the cache: the
// prompt's compute with the disk out of it where the cache holds them all
// (DiskBytes says how much it still read: 0 when it did).
type WarmPrefill struct {
	TimeToFirstToken float64             `json:"ttft_s"`
	DiskBytes        int64               `json:"disk_bytes"`
	ExpertWait       float64             `json:"expert_wait_s"`
	Routes           *kernels.RouteStats `json:"routes,omitempty"`
}

// enginePrefill opens the slice with an empty expert cache and runs a
// prompt of o.Prefill pseudo-random token ids through it, expert-major.
func (o SliceBenchOptions) enginePrefill(ctx context.Context, plan experts.BudgetPlan) (PrefillResult, error) {
	r := PrefillResult{Tokens: o.Prefill}
	// The plan as it is, its expert cache starting empty (a fresh open
	// loads none): every distinct expert is read from disk once, which the
	// read amplification checks, and the cache's unfilled share holds the
	// experts a prompt's chunks name ahead of the expert-major pass.
	tracePath := filepath.Join(o.Dir, "prefill-trace.jsonl")
	defer os.Remove(tracePath)
	o.dropSliceCache()
	// The runs before this one left their models' buffers to the
	// collector: collected now, not during this pass.
	runtime.GC()
	opened := time.Now()
	m, err := engine.Open(ctx, o.Dir, engine.Options{Backend: o.Backend, OpenSource: o.open, Stream: &engine.StreamOptions{Plan: &plan, TracePath: tracePath}})
	if err != nil {
		return r, err
	}
	r.OpenTotal, r.Open = time.Since(opened).Seconds(), m.OpenStats()
	if r.Open.PinnedSeconds > 0 {
		r.PinnedGBps = float64(r.Open.PinnedBytes) / r.Open.PinnedSeconds / 1e9
	}
	waited := time.Now()
	if err := m.WaitPreload(ctx); err != nil {
		m.Close()
		return r, err
	}
	r.Preload = time.Since(waited).Seconds()
	rng := rand.New(rand.NewPCG(o.Seed, 0x9EF1))
	prompt := make([]int, o.Prefill)
	for i := range prompt {
		prompt[i] = rng.IntN(m.Info().VocabSize)
	}
	stop := func() {}
	if o.Profile != nil {
		stop = o.Profile("prefill")
	}
	// Read just before the pass: its disk idle then counts from the pass's
	// start, the attention before the first expert read included.
	before := m.Stats()
	routes0, split := kernels.Routes(o.Backend)
	start := time.Now()
	_, err = m.NewSession().Forward(ctx, prompt, false)
	r.TimeToFirstToken = time.Since(start).Seconds()
	stop()
	st := m.Stats().Sub(before)
	if routes1, _ := kernels.Routes(o.Backend); split {
		d := routes1.Sub(routes0)
		r.Routes = &d
	}
	if err == nil && o.PrefillWarm {
		r.Warm, err = o.warmPrefill(ctx, m, prompt)
	}
	if cerr := m.Close(); err == nil { // puts the trace in place
		err = cerr
	}
	if err != nil {
		return r, err
	}
	f, err := os.Open(tracePath)
	if err != nil {
		return r, err
	}
	defer f.Close()
	distinct := map[choice]bool{}
	seen := map[choice]bool{} // (token, layer): the warm pass repeats them
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// One line per token and MoE layer: the experts its router chose.
		var rec struct {
			Token   int   `json:"token"`
			Layer   int   `json:"layer"`
			Experts []int `json:"experts"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return r, fmt.Errorf("bench: prefill trace: %w", err)
		}
		k := choice{rec.Layer, rec.Token}
		if seen[k] {
			continue
		}
		seen[k] = true
		r.TokenMajorExperts += len(rec.Experts)
		for _, e := range rec.Experts {
			distinct[choice{rec.Layer, e}] = true
		}
	}
	if err := sc.Err(); err != nil {
		return r, err
	}
	r.DistinctExperts, r.DiskBytes = len(distinct), st.ExpertBytes
	r.ExpertWait, r.DiskIdle = st.ExpertWait.Seconds(), st.DiskIdle.Seconds()
	r.Compute = r.TimeToFirstToken - r.ExpertWait
	if r.DistinctExperts > 0 {
		r.ReadAmplification = float64(st.ExpertBytes) / float64(int64(r.DistinctExperts)*ckpt.ExpertSpanBytes)
		r.TokenMajorAmplification = float64(r.TokenMajorExperts) / float64(r.DistinctExperts)
		if r.ReadsAlone, err = replayPrefillReads(ctx, o.Dir, distinct); err != nil {
			return r, err
		}
		r.TTFTRatio = r.TimeToFirstToken / r.ReadsAlone
	}
	return r, nil
}

// warmPrefill runs prompt again through a new session of m (no state of
// the first pass's session is shared: only the expert cache it filled).
func (o SliceBenchOptions) warmPrefill(ctx context.Context, m *engine.Model, prompt []int) (*WarmPrefill, error) {
	runtime.GC()
	before := m.Stats()
	routes0, split := kernels.Routes(o.Backend)
	start := time.Now()
	if _, err := m.NewSession().Forward(ctx, prompt, false); err != nil {
		return nil, fmt.Errorf("bench: warm prefill: %w", err)
	}
	w := &WarmPrefill{TimeToFirstToken: time.Since(start).Seconds()}
	st := m.Stats().Sub(before)
	w.DiskBytes, w.ExpertWait = st.ExpertBytes, st.ExpertWait.Seconds()
	if routes1, _ := kernels.Routes(o.Backend); split {
		d := routes1.Sub(routes0)
		w.Routes = &d
	}
	return w, nil
}

// Int8Result compares the int8 spine with BF16 over the slice.
type Int8Result struct {
	Positions   int      `json:"positions"`
	MaxLogitDev float64  `json:"max_logit_deviation"`
	LogitRange  float64  `json:"bf16_logit_range"` // max − min of the BF16 logits, for scale
	Top1Agree   float64  `json:"top1_agreement"`
	SpineBytes  [2]int64 `json:"spine_bytes"` // [BF16, int8] pinned spine and globals
}

// engineInt8 converts the slice's spine to int8 (once; resumable) and runs
// the same prompt through the BF16 and the int8 spine, every position's
// logits compared.
func (o SliceBenchOptions) engineInt8(ctx context.Context, plan experts.BudgetPlan) (Int8Result, error) {
	var r Int8Result
	out := engine.SpineInt8Dir(o.Dir)
	if err := engine.ConvertSpineInt8(ctx, o.Dir, out, nil); err != nil {
		return r, err
	}
	plan.CacheExperts = 0
	rng := rand.New(rand.NewPCG(o.Seed, 0x18))
	prompt := make([]int, 16)
	for i := range prompt {
		prompt[i] = rng.IntN(k3Vocab)
	}
	var rows [2][][]float32
	for i, dir := range []string{"", out} {
		p := plan
		m, err := engine.Open(ctx, o.Dir, engine.Options{Backend: o.Backend, SpineInt8: dir, NoSpec: true, Stream: &engine.StreamOptions{Plan: &p}})
		if err != nil {
			return r, err
		}
		// The spine as the budget counts it (int8: a byte per weight and
		// a float32 scale per row).
		r.SpineBytes[i] = m.Info().SpineBytes
		rows[i], err = m.NewSession().Forward(ctx, prompt, true)
		if cerr := m.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return r, err
		}
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	same := 0
	for p := range rows[0] {
		a, b := rows[0][p], rows[1][p]
		for j := range a {
			r.MaxLogitDev = max(r.MaxLogitDev, math.Abs(float64(a[j]-b[j])))
			lo, hi = min(lo, float64(a[j])), max(hi, float64(a[j]))
		}
		if argmax(a) == argmax(b) {
			same++
		}
	}
	r.Positions, r.LogitRange = len(rows[0]), hi-lo
	r.Top1Agree = float64(same) / float64(len(rows[0]))
	return r, nil
}

// ioOnlyRate replays the engine decode's reads without computing, through
// the expert store directly: per token and layer, in the forward pass's
// order, the layer's 16 random experts (K3's top-k) acquired through a cacheless store
// while the layer's spine (when it is not among the first pinned layers)
// is read, in 4 MiB direct reads, as the spine ring reads it. It returns
// GB/s: the limit for this mix of reads on this disk, measured in the same
// run. On a disk whose host caches (a virtual one), a spine re-read every
// token comes faster than random expert spans, so this, not (a), is the
// figure to hold the engine's traffic to.
func ioOnlyRate(ctx context.Context, dir string, pinned, tokens int, rng *rand.Rand) (float64, error) {
	ix, err := ckpt.OpenIndex(ctx, dir, nil)
	if err != nil {
		return 0, err
	}
	spans, err := ix.Experts()
	spine := spineExtents(ix, pinned)
	ix.Close()
	if err != nil {
		return 0, err
	}
	store, err := experts.Open(ctx, experts.Options{Dir: dir, Spans: spans})
	if err != nil {
		return 0, err
	}
	defer store.Close()
	files := map[string]*experts.ShardFile{}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	for _, ext := range spine {
		for _, e := range ext {
			if files[e.shard] == nil {
				f, _, err := experts.OpenShard(filepath.Join(dir, e.shard), e.shard, directio.Direct, nil)
				if err != nil {
					return 0, err
				}
				files[e.shard] = f
			}
		}
	}
	perLayer := map[int]int{} // experts per MoE layer
	for id := range spans {
		perLayer[id.Layer] = max(perLayer[id.Layer], id.Expert+1)
	}
	var spineBytes int64
	before, start := store.Stats(), time.Now()
	for range tokens {
		for layer := range spine {
			var b *experts.Batch
			if n := perLayer[layer]; n > 0 {
				if b, err = store.Acquire(ctx, layer, randomIDs(rng, n, min(n, k3TopK))); err != nil {
					return 0, err
				}
			}
			n, err := readExtents(ctx, files, spine[layer])
			spineBytes += n
			if b != nil {
				for k := range b.Len() {
					if _, werr := b.Wait(ctx, k); werr != nil && err == nil {
						err = werr
					}
				}
				b.Release()
			}
			if err != nil {
				return 0, err
			}
		}
	}
	el := time.Since(start).Seconds()
	return float64(store.Stats().Sub(before).DiskBytes+spineBytes) / el / 1e9, nil
}

// extent is a contiguous byte range of one shard.
type extent struct {
	shard  string
	lo, hi int64
}

// spineExtents returns, for each decoder layer, the byte ranges of its
// spine tensors (every tensor of the layer but the routed experts') merged
// where they touch; none for the first pinned layers, which stay in RAM.
func spineExtents(ix *ckpt.Index, pinned int) [][]extent {
	layers := 0
	type ref struct {
		shard  string
		lo, hi int64
		layer  int
	}
	var refs []ref
	for _, s := range ix.Shards {
		for _, t := range s.Header.Tensors {
			name, _ := strings.CutPrefix(t.Name, ix.Prefix)
			if ckpt.IsExpertTensor(name) {
				continue
			}
			if i, ok := ckpt.LayerOf(name, math.MaxInt); ok {
				layers = max(layers, i+1)
				refs = append(refs, ref{s.Name, t.Offset, t.End(), i})
			}
		}
	}
	out := make([][]extent, layers)
	slices.SortFunc(refs, func(a, b ref) int {
		return cmp.Or(cmp.Compare(a.layer, b.layer), strings.Compare(a.shard, b.shard), cmp.Compare(a.lo, b.lo))
	})
	for _, r := range refs {
		if r.layer < pinned {
			continue
		}
		ext := out[r.layer]
		if n := len(ext); n > 0 && ext[n-1].shard == r.shard && ext[n-1].hi >= r.lo {
			ext[n-1].hi = max(ext[n-1].hi, r.hi)
			continue
		}
		out[r.layer] = append(ext, extent{r.shard, r.lo, r.hi})
	}
	return out
}

// readExtents reads exts in chunks of experts.ReadChunk on 16 readers
// (aligned for the direct descriptors) and returns the bytes read.
func readExtents(ctx context.Context, files map[string]*experts.ShardFile, exts []extent) (int64, error) {
	type job struct {
		f      *experts.ShardFile
		lo, hi int64
	}
	var jobs []job
	for _, e := range exts {
		f := files[e.shard]
		lo, hi := e.lo, e.hi
		if f.Direct() {
			lo, hi = directio.AlignDown(lo), directio.AlignUp(hi)
		}
		for c := lo; c < hi; c += experts.ReadChunk {
			jobs = append(jobs, job{f, c, min(c+experts.ReadChunk, hi)})
		}
	}
	var next, total atomic.Int64
	errs := make([]error, 16)
	var wg sync.WaitGroup
	for w := range errs {
		wg.Go(func() {
			buf := directio.Buffer(experts.ReadChunk)
			for i := int(next.Add(1) - 1); i < len(jobs); i = int(next.Add(1) - 1) {
				if err := ctx.Err(); err != nil {
					errs[w] = err
					return
				}
				j := jobs[i]
				n, err := j.f.ReadFull(buf[:j.hi-j.lo], j.lo)
				total.Add(n)
				if err != nil {
					errs[w] = fmt.Errorf("bench: read the spine of %s at %d: %w", j.f.Name(), j.lo, err)
					return
				}
			}
		})
	}
	wg.Wait()
	return total.Load(), errors.Join(errs...)
}

// argmax returns the index of the largest value, the first one on ties.
func argmax(x []float32) int { return slices.Index(x, slices.Max(x)) }
