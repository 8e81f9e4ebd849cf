package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/experts"
	"github.com/deltafin/deltafin/kernels"
)

// SliceBenchOptions configures BenchSlice.
type SliceBenchOptions struct {
	Dir     string
	Layout  SliceLayout
	Backend kernels.Backend // nil: kernels.Default()
	// Plan is the slice's budget plan: its expert cache for the decode
	// runs, its pinned layers for the engine run.
	Plan experts.BudgetPlan
	// RAM is the machine's memory (TotalRAM, AvailableRAM, OverrideRAM) for
	// the projection of the full K3; the model fields are filled in here.
	RAM experts.BudgetInput
	// Tokens is the number of measured decode tokens (default 8), after
	// Warmup tokens (default 2) that fill the cache and the prefetcher.
	Tokens, Warmup int
	Seed           uint64
	// Engine also runs the engine's forward pass over the slice under Plan
	// (slow with the reference kernels: the spine and lm_head are computed
	// too); EngineStreamed runs it with the spine pinned in the full K3's
	// proportion on this machine (SliceLikeK3: the head pinned, the
	// slice's layers streamed).
	Engine, EngineStreamed bool
	// SkipSynthetic leaves out the synthetic decode loops (b); (a) and the
	// compute primitives are still measured.
	SkipSynthetic bool
	// Profile, when set, is called around each engine decode's measured
	// steps with "natural" or "streamed"; it returns the function ending
	// the profile (bench slice --cpuprofile).
	Profile func(run string) (stop func())
	// Prefill, when positive, also runs a prompt of that many tokens
	// through the engine with a cold store: time to first token and read
	// amplification of the expert-major prefill.
	Prefill int
	// PrefillWarm, with Prefill, runs the same prompt a second time on the
	// same model, its experts in the cache the first pass filled
	// (PrefillResult.Warm): the prompt's compute without the disk.
	PrefillWarm bool
	// Int8 also converts the slice's spine to int8 (once) and compares its
	// logits with BF16's.
	Int8 bool
	// Drafts, when set, decodes under the streamed plan with T = 1 and
	// then with the oracle drafter at each acceptance (bench slice --draft
	// oracle:R,…; slice_draft.go).
	Drafts []float64
	// Mirror also runs the engine decode under Plan and, with Prefill, the
	// prompt over the slice installed as a full mirror (installMirror: the
	// same bytes, hard-linked, with the downloader's manifest and presence
	// maps), read through the mirror's Sources as an installed model is
	// (app.OpenModel's MirrorSource): every expert Ensured, then read in
	// chunks on the scheduler, as over the plain files.
	Mirror bool
	Log    func(format string, args ...any) // progress lines; nil: silent
	// open opens the checkpoint's files for the engine runs: nil, plain
	// files; the mirror's Sources for the Mirror runs.
	open ckpt.OpenSource
}

// ReadBandwidth is one read mode's parallel bandwidth over cold expert spans.
type ReadBandwidth struct {
	Mode        string  `json:"mode"`
	GBPerSecond float64 `json:"gb_per_s"`
}

// DecodeResult is one steady decode run over the slice.
type DecodeResult struct {
	Compute           bool    `json:"compute"`     // ran the expert FFNs, or only read
	SecondsPerToken   float64 `json:"s_per_token"` // median-free mean over the measured tokens
	DiskBytesPerToken float64 `json:"disk_bytes_per_token"`
	DiskGBPerSecond   float64 `json:"disk_gb_per_s"` // bytes per token ÷ seconds per token
	Ratio             float64 `json:"ratio"`         // DiskGBPerSecond ÷ direct parallel bandwidth
	CacheHitRate      float64 `json:"cache_hit_rate"`
	PrefetchHitRate   float64 `json:"prefetch_hit_rate"` // demanded experts found prefetched
	PrefetchWasted    float64 `json:"prefetch_wasted_per_token"`
	// SpineBytesPerToken (engine runs) is the part of DiskBytesPerToken
	// read for streamed spine layers.
	SpineBytesPerToken float64 `json:"spine_bytes_per_token,omitempty"`
	// IOOnlyGBPerSecond (streamed spine) is the rate of the same mix of
	// reads without compute (ioOnlyRate), measured right after the
	// decode, and IORatio DiskGBPerSecond ÷ it.
	IOOnlyGBPerSecond float64 `json:"io_only_gb_per_s,omitempty"`
	IORatio           float64 `json:"io_ratio,omitempty"`
	// DiskIdle (engine runs) is the share of the measured time with no
	// read in flight, MeanInFlight the mean number of 4 MiB reads in
	// flight.
	DiskIdle     float64 `json:"disk_idle"`
	MeanInFlight float64 `json:"mean_reads_in_flight"`
	// Speculation (engine runs only), over the measured tokens: verify
	// passes, the share of drafted tokens accepted, and generated tokens
	// per pass; the target's passes and the tokens drafted and accepted.
	SpecPasses     int     `json:"spec_passes,omitempty"`
	SpecAcceptRate float64 `json:"spec_accept_rate,omitempty"`
	TokensPerPass  float64 `json:"tokens_per_pass,omitempty"`
	TargetPasses   int     `json:"target_passes,omitempty"`
	Drafted        int     `json:"drafted_tokens,omitempty"`
	Accepted       int     `json:"accepted_tokens,omitempty"`
}

// SliceReport is everything bench slice measures in one run.
type SliceReport struct {
	MoELayers      int             `json:"moe_layers"`
	SliceBytes     int64           `json:"slice_bytes"`
	RAMBytes       int64           `json:"ram_bytes"`
	Backend        string          `json:"backend"`
	Bandwidth      []ReadBandwidth `json:"read_bandwidth"` // (a), direct first
	ChosenMode     string          `json:"chosen_mode"`
	ExpertFFNGBps  float64         `json:"expert_ffn_gb_per_s"` // weight bytes/s, all cores
	MatVecBF16GBps float64         `json:"matvec_bf16_gb_per_s"`
	DecodeIO       DecodeResult    `json:"decode_io_only"`
	Decode         DecodeResult    `json:"decode"` // (b)
	// EngineDecode is the real forward pass over the slice (the router
	// chooses; spine, router, attention and lm_head computed too).
	EngineDecode *DecodeResult `json:"engine_decode,omitempty"`
	// EngineStreamed is the same under StreamedPlan: the spine pinned in
	// the full K3's proportion on this machine (its layers streamed).
	EngineStreamed *DecodeResult      `json:"engine_decode_streamed,omitempty"`
	StreamedPlan   experts.BudgetPlan `json:"streamed_plan"`
	EnginePrefill  *PrefillResult     `json:"engine_prefill,omitempty"`
	EngineInt8     *Int8Result        `json:"engine_int8,omitempty"`
	// Drafting is T = 1 and the oracle runs of Drafts (streamed plan).
	Drafting []DraftResult `json:"drafting,omitempty"`
	// MirrorDecode and MirrorPrefill are EngineDecode and EnginePrefill
	// over the slice installed as a mirror (SliceBenchOptions.Mirror).
	MirrorDecode    *DecodeResult      `json:"mirror_decode,omitempty"`
	MirrorPrefill   *PrefillResult     `json:"mirror_prefill,omitempty"`
	K3Plan          experts.BudgetPlan `json:"k3_plan"`
	K3SecondsPerTok [2]float64         `json:"k3_projected_s_per_token"` // [overlapped, serial]
}

// BenchSlice measures the slice: (a) parallel read bandwidth of 16 random
// expert spans per mode with the page cache cold, (b) steady decode through
// the expert store, and the compute primitives, then projects the full K3.
func BenchSlice(ctx context.Context, o SliceBenchOptions) (SliceReport, error) {
	if o.Backend == nil {
		o.Backend = kernels.Default()
	}
	if o.Tokens <= 0 {
		o.Tokens = 8
	}
	if o.Warmup < 0 {
		o.Warmup = 0
	}
	logf := o.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	r := SliceReport{MoELayers: len(o.Layout.Layers), SliceBytes: o.Layout.TotalBytes, RAMBytes: o.RAM.TotalRAM, Backend: o.Backend.Name()}
	rng := rand.New(rand.NewPCG(o.Seed, 0x5EED))
	o.dropSliceCache()
	for _, mode := range []string{"direct", "drop-behind", "buffered"} {
		bw, err := readBandwidth(ctx, o.Dir, o.Layout.Layers, mode, rng)
		if err != nil {
			return r, err
		}
		logf("(a) %-11s 16 parallel %d-byte reads: %.2f GB/s", mode, ckpt.ExpertSpanBytes, bw)
		r.Bandwidth = append(r.Bandwidth, ReadBandwidth{mode, bw})
	}
	o.dropSliceCache()
	r.ChosenMode = "direct"
	var err error
	if r.ExpertFFNGBps, err = expertFFNThroughput(ctx, o.Dir, o.Layout.Layers[0], o.Backend); err != nil {
		return r, err
	}
	r.MatVecBF16GBps = matVecThroughput(o.Backend)
	logf("compute (%s, %d threads): expert FFN %.2f GB/s of weights, BF16 matvec %.2f GB/s", o.Backend.Name(), runtime.NumCPU(), r.ExpertFFNGBps, r.MatVecBF16GBps)
	for _, compute := range []bool{false, true} {
		if o.SkipSynthetic {
			break
		}
		d, err := o.decode(ctx, compute, rng)
		if err != nil {
			return r, err
		}
		if compute {
			r.Decode = d
		} else {
			r.DecodeIO = d
		}
	}
	// The disk's bandwidth drifts (other tenants, the host's cache): measure
	// (a) again after the decodes and hold them to the better figure.
	again, err := readBandwidth(ctx, o.Dir, o.Layout.Layers, "direct", rng)
	if err != nil {
		return r, err
	}
	logf("(a) direct again after decoding: %.2f GB/s", again)
	r.Bandwidth[0].GBPerSecond = max(r.Bandwidth[0].GBPerSecond, again)
	for _, d := range []*DecodeResult{&r.DecodeIO, &r.Decode} {
		if o.SkipSynthetic {
			break
		}
		d.Ratio = d.DiskGBPerSecond / r.Bandwidth[0].GBPerSecond
		what := "reads only"
		if d.Compute {
			what = "reads + expert FFN"
		}
		logf("(b) decode, %s: %.3f s/token, %.1f MB/token from disk, %.2f GB/s = %.2f of (a); cache hits %.0f%%, prefetch hits %.0f%%",
			what, d.SecondsPerToken, d.DiskBytesPerToken/1e6, d.DiskGBPerSecond, d.Ratio, 100*d.CacheHitRate, 100*d.PrefetchHitRate)
	}
	if r.K3Plan, err = planK3(o.RAM); err != nil {
		return r, err
	}
	r.StreamedPlan = SliceLikeK3(r.K3Plan, o.Layout)
	// The engine runs share one heat histogram, as a model reopened on the
	// same data directory would: the streamed run starts from what the
	// natural run learnt.
	heat := filepath.Join(o.Dir, "bench-heat.bin")
	os.Remove(heat)
	defer os.Remove(heat)
	for _, run := range []struct {
		on   bool
		name string
		plan experts.BudgetPlan
		out  **DecodeResult
	}{{o.Engine, "natural", o.Plan, &r.EngineDecode}, {o.EngineStreamed, "streamed", r.StreamedPlan, &r.EngineStreamed}} {
		if !run.on {
			continue
		}
		if run.name == "streamed" {
			logf("engine, spine as the full K3's on this machine: %s", run.plan)
		}
		d, _, _, err := o.engineDecode(ctx, run.plan, heat, run.name, decodeRun{})
		if err != nil {
			return r, err
		}
		a := r.Bandwidth[0].GBPerSecond
		d.Ratio = d.DiskGBPerSecond / a
		if d.IOOnlyGBPerSecond > 0 {
			d.IORatio = d.DiskGBPerSecond / d.IOOnlyGBPerSecond
			logf("engine (%s plan): the same reads without compute: %.2f GB/s (%.2f of (a)); the decode reaches %.2f of it; disk idle %.1f%% of the time, %.1f reads in flight on average",
				run.name, d.IOOnlyGBPerSecond, d.IOOnlyGBPerSecond/a, d.IORatio, 100*d.DiskIdle, d.MeanInFlight)
		}
		*run.out = &d
		logf("(b) decode, engine forward (%s plan): %.3f s/token, %.1f MB/token from disk (%.1f MB of spine), %.2f GB/s = %.2f of (a); disk idle %.1f%%; cache hits %.0f%%, prefetch hits %.0f%%; speculation: %d passes, %.0f%% accepted, %.2f tokens/pass",
			run.name, d.SecondsPerToken, d.DiskBytesPerToken/1e6, d.SpineBytesPerToken/1e6, d.DiskGBPerSecond, d.Ratio, 100*d.DiskIdle, 100*d.CacheHitRate, 100*d.PrefetchHitRate, d.SpecPasses, 100*d.SpecAcceptRate, d.TokensPerPass)
	}
	if len(o.Drafts) > 0 {
		if r.Drafting, err = o.engineDrafts(ctx, r.StreamedPlan, heat); err != nil {
			return r, err
		}
		for _, d := range r.Drafting {
			logf("drafting, engine forward (streamed plan), %s: %.3f s/token (%.2f× T = 1), %.1f MB/token from disk (%.2f of T = 1); %d target passes for %d tokens, %d of %d drafted accepted, %.2f positions per pass",
				d.Draft, d.SecondsPerToken, d.SpeedupVsT1, d.DiskBytesPerToken/1e6, d.BytesVsT1, d.TargetPasses, o.Tokens, d.Accepted, d.Drafted, d.MeanT)
		}
	}
	if o.Prefill > 0 {
		p, err := o.enginePrefill(ctx, o.Plan)
		if err != nil {
			return r, err
		}
		r.EnginePrefill = &p
		logf("prefill, engine forward: %d tokens, time to first token %.2f s; %d distinct experts read, amplification %.4f (token-major would acquire %.2f×); read once without compute %.2f s (TTFT %.2f× that), waiting for experts %.2f s, compute %.2f s",
			p.Tokens, p.TimeToFirstToken, p.DistinctExperts, p.ReadAmplification, p.TokenMajorAmplification, p.ReadsAlone, p.TTFTRatio, p.ExpertWait, p.Compute)
		if rt := p.Routes; rt != nil {
			for _, side := range []struct {
				name string
				s    kernels.RouteSide
			}{{"GPU", rt.GPU}, {"CPU", rt.CPU}} {
				logf("prefill on the %s: %.2f s; products %d calls %.2f s, experts %d calls of %d positions %.2f s, attention %d calls %.2f s",
					side.name, side.s.Seconds(), side.s.MatMul.Calls, side.s.MatMul.Seconds, side.s.Experts.Calls, side.s.Experts.Positions, side.s.Experts.Seconds, side.s.Attention.Calls, side.s.Attention.Seconds)
			}
			if d := rt.Device; d.Shaders > 0 {
				logf("prefill: by the GPU's own clock, its shaders ran %.2f s and its copies between host and device memory %.2f s (the rest of its %.2f s is the host's side of its calls)",
					d.Shaders, d.Copies, rt.GPU.Seconds())
			}
			logf("prefill: the spine's copy to the GPU went on %.2f s after the open, before the prompt", p.Preload)
			logf("prefill: of the GPU's time, %.2f s copied %.2f GB of the spine to stay resident (a later prompt's calls find it there)", rt.Uploaded.Seconds, float64(rt.Uploaded.Bytes)/1e9)
		}
		if w := p.Warm; w != nil {
			logf("prefill again, experts cached: time to first token %.2f s, %.2f GB still read", w.TimeToFirstToken, float64(w.DiskBytes)/1e9)
			if rt := w.Routes; rt != nil {
				logf("prefill again on the GPU: %.2f s (experts %d calls %.2f s), on the CPU %.2f s", rt.GPU.Seconds(), rt.GPU.Experts.Calls, rt.GPU.Experts.Seconds, rt.CPU.Seconds())
			}
		}
	}
	if o.Mirror {
		if err := o.benchMirror(ctx, &r, heat, logf); err != nil {
			return r, err
		}
	}
	if o.Int8 {
		q, err := o.engineInt8(ctx, o.Plan)
		if err != nil {
			return r, err
		}
		r.EngineInt8 = &q
		logf("int8 spine vs BF16 over %d positions: max |Δlogit| %.4g (BF16 logits span %.4g), top-1 agreement %.0f%%; spine %.2f → %.2f GB",
			q.Positions, q.MaxLogitDev, q.LogitRange, 100*q.Top1Agree, float64(q.SpineBytes[0])/1e9, float64(q.SpineBytes[1])/1e9)
	}
	r.K3SecondsPerTok = projectK3(r)
	return r, nil
}

// dropSliceCache evicts the slice from the page cache so buffered reads start cold.
func (o SliceBenchOptions) dropSliceCache() {
	for _, name := range o.Layout.Shards {
		if f, err := os.Open(filepath.Join(o.Dir, name)); err == nil {
			dropRange(f, 0, 0)
			f.Close()
		}
	}
}

// randomIDs picks k distinct experts of n.
func randomIDs(rng *rand.Rand, n, k int) []int {
	return rng.Perm(n)[:k]
}

// readBandwidth reads rounds of 16 random spans of one random layer in
// parallel through a cacheless store in mode and returns GB/s.
func readBandwidth(ctx context.Context, dir string, layers []int, mode string, rng *rand.Rand) (float64, error) {
	p, err := openProbe(ctx, dir, probeOptions{Mode: mode})
	if err != nil {
		return 0, err
	}
	defer p.Close()
	const rounds = 12
	start := time.Now()
	for range rounds {
		if err := p.Read(ctx, layers[rng.IntN(len(layers))], randomIDs(rng, k3Experts, k3TopK)); err != nil {
			return 0, err
		}
	}
	el := time.Since(start).Seconds()
	return float64(rounds*k3TopK*ckpt.ExpertSpanBytes) / el / 1e9, nil
}

// nextRoute keeps each of prev's experts with probability 0.31 (K3's
// token-to-token repeat as reported from real runs, docs/MODEL.md §10) and
// fills the rest uniformly.
func nextRoute(rng *rand.Rand, prev []int) []int {
	ids := make([]int, 0, k3TopK)
	used := map[int]bool{}
	for _, e := range prev {
		if rng.Float64() < 0.31 {
			ids = append(ids, e)
			used[e] = true
		}
	}
	for len(ids) < k3TopK {
		if e := rng.IntN(k3Experts); !used[e] {
			ids = append(ids, e)
			used[e] = true
		}
	}
	return ids
}

// decode runs the synthetic decode loop: per token and MoE layer a route
// with the realistic repeat, the layer's experts acquired (reads start),
// the next layer's previous-token experts prefetched, each expert's FFN
// computed as soon as it arrives on every core, then released.
func (o SliceBenchOptions) decode(ctx context.Context, compute bool, rng *rand.Rand) (DecodeResult, error) {
	p, err := openProbe(ctx, o.Dir, probeOptions{CacheExperts: o.Plan.CacheExperts, Backend: o.Backend})
	if err != nil {
		return DecodeResult{}, err
	}
	defer p.Close()
	layers := o.Layout.Layers
	prev := make([][]int, len(layers))
	for i := range prev {
		prev[i] = randomIDs(rng, k3Experts, k3TopK)
	}
	var base experts.Stats
	var start time.Time
	for tok := range o.Warmup + o.Tokens {
		if tok == o.Warmup {
			base, start = p.Stats(), time.Now()
		}
		for li, layer := range layers {
			ids := nextRoute(rng, prev[li])
			prev[li] = ids
			next := (li + 1) % len(layers)
			if err := p.Step(ctx, layer, ids, layers[next], prev[next], compute); err != nil {
				return DecodeResult{}, err
			}
		}
	}
	el := time.Since(start).Seconds()
	st := p.Stats().Sub(base)
	n := float64(o.Tokens)
	demanded := float64(st.Misses + st.CacheHits + st.SpecHits)
	d := DecodeResult{
		Compute:           compute,
		SecondsPerToken:   el / n,
		DiskBytesPerToken: float64(st.DiskBytes) / n,
		CacheHitRate:      float64(st.CacheHits) / demanded,
		PrefetchHitRate:   float64(st.SpecHits) / demanded,
		PrefetchWasted:    float64(st.SpecWasted) / n,
	}
	d.DiskGBPerSecond = d.DiskBytesPerToken / d.SecondsPerToken / 1e9
	return d, nil
}

// expertFFNThroughput runs K3-shaped expert FFNs on every core over
// weights in RAM (layer's first 16 experts, read once into the probe's
// cache) and returns weight bytes per second.
func expertFFNThroughput(ctx context.Context, dir string, layer int, be kernels.Backend) (float64, error) {
	p, err := openProbe(ctx, dir, probeOptions{CacheExperts: k3TopK, Backend: be})
	if err != nil {
		return 0, err
	}
	defer p.Close()
	ids := make([]int, k3TopK)
	for i := range ids {
		ids[i] = i
	}
	if err := p.Read(ctx, layer, ids); err != nil {
		return 0, err
	}
	const per = 2
	before, start := p.Stats(), time.Now()
	for range per {
		if err := p.Step(ctx, layer, ids, -1, nil, true); err != nil {
			return 0, err
		}
	}
	el := time.Since(start).Seconds()
	if read := p.Stats().Sub(before).DiskBytes; read != 0 {
		return 0, fmt.Errorf("bench: expert FFN rate: %d bytes read from disk, the experts should have been cached", read)
	}
	return float64(per*k3TopK*ckpt.ExpertSpanBytes) / el / 1e9, nil
}

// matVecThroughput runs a K3 latent projection ([3584, 7168] BF16) split by
// rows over every core and returns weight bytes per second.
func matVecThroughput(be kernels.Backend) float64 {
	nc := runtime.NumCPU()
	rows := k3Latent / nc
	data := make([]byte, rows*nc*k3Hidden*2)
	t := []synthTensor{{"w", "BF16", []int64{int64(rows * nc), k3Hidden}, fillBF16}}
	fillChunk(data, 8, nil, t, []int64{8}, 3)
	x := make([]float32, k3Hidden)
	for i := range x {
		x[i] = float32(i%5) - 2
	}
	const per = 3
	var wg sync.WaitGroup
	start := time.Now()
	for i := range nc {
		m := kernels.Matrix{DType: kernels.BF16, Rows: rows, Cols: k3Hidden, Data: data[i*rows*k3Hidden*2 : (i+1)*rows*k3Hidden*2]}
		wg.Add(1)
		go func() {
			defer wg.Done()
			dst := make([]float32, rows)
			for range per {
				be.MatVec(dst, m, x)
			}
		}()
	}
	wg.Wait()
	return float64(per*len(data)) / time.Since(start).Seconds() / 1e9
}

// k3SpineBytes returns the full K3's per-layer spine bytes (BF16, as the
// checkpoint stores it) and its globals.
func k3SpineBytes() ([]int64, int64) {
	layers := make([]int64, k3Layers)
	for i := range layers {
		if i == 0 {
			// Layer 0: KDA attention plus the dense MLP instead of the MoE block.
			spine := k3LayerSpine(0, false)
			moe := sumSize(spine[len(spine)-8:])
			layers[0] = sumSize(spine) - moe + 3*33792*k3Hidden*2
			continue
		}
		layers[i] = sumSize(k3LayerSpine(i, k3IsMLA(i)))
	}
	return layers, sumSize(k3Globals())
}

// planK3 plans the real 93-layer K3 on this machine's RAM.
func planK3(ram experts.BudgetInput) (experts.BudgetPlan, error) {
	layers, globals := k3SpineBytes()
	in := ram
	in.LayerBytes, in.GlobalBytes = layers, globals
	in.SpanBytes, in.MoELayers, in.ExpertsPerLayer, in.TopK = ckpt.ExpertSpanBytes, k3MoELayers, k3Experts, k3TopK
	in.WorkingBytes = StoreWorkingBytes() + 69*96*128*128*4 // store buffers and the KDA states
	p, err := experts.PlanBudget(in)
	if err != nil {
		return p, fmt.Errorf("bench: K3 on this machine: %w", err)
	}
	return p, nil
}

// SliceLikeK3 is a plan for the slice that pins its spine in the proportion
// k3 (the full K3's plan on this machine) pins K3's: the head as k3 does,
// the same share of layers (rounded down) and the same share of experts
// cached. On a machine that streams most of K3's spine, the slice's
// layers all stream, so the engine over the slice meets per token what K3
// would: the head computed from RAM, the spine and experts from disk.
func SliceLikeK3(k3 experts.BudgetPlan, l SliceLayout) experts.BudgetPlan {
	n := len(l.Layers)
	p := experts.BudgetPlan{RAM: k3.RAM, Reserve: k3.Reserve, Usable: k3.Usable, GlobalsPinned: k3.GlobalsPinned}
	p.PinnedLayers = n * k3.PinnedLayers / k3Layers
	p.CacheExperts = int(int64(k3.CacheExperts) * int64(n) / k3MoELayers)
	p.CacheBytes = int64(p.CacheExperts) * storeBuffer
	spine := l.GlobalBytes
	for _, b := range l.SpineBytes {
		spine += b
	}
	if p.GlobalsPinned {
		p.PinnedBytes = l.GlobalBytes
		for _, b := range l.SpineBytes[:p.PinnedLayers] {
			p.PinnedBytes += b
		}
	} else {
		p.PinnedLayers = 0
	}
	p.StreamedSpineBytes = spine - p.PinnedBytes
	for _, b := range l.SpineBytes[p.PinnedLayers:] {
		p.RingBytes = max(p.RingBytes, 2*b)
	}
	miss := 1 - float64(p.CacheExperts)/float64(n*k3Experts)
	p.ExpertBytesPerToken = int64(float64(n*k3TopK*ckpt.ExpertSpanBytes) * miss)
	p.DiskBytesPerToken = p.StreamedSpineBytes + p.ExpertBytesPerToken
	return p
}

// projectK3 projects the full K3's s/token on this machine from its plan
// and the measured primitives: [all I/O overlapped with compute, I/O and
// compute one after the other].
func projectK3(r SliceReport) [2]float64 {
	layers, globals := k3SpineBytes()
	var spine int64 = globals
	for _, b := range layers {
		spine += b
	}
	disk := float64(r.K3Plan.DiskBytesPerToken) / (r.Bandwidth[0].GBPerSecond * 1e9)
	experts := float64(k3MoELayers * k3TopK * ckpt.ExpertSpanBytes)
	compute := float64(spine)/(r.MatVecBF16GBps*1e9) + experts/(r.ExpertFFNGBps*1e9)
	return [2]float64{max(disk, compute), disk + compute}
}

// storeBuffer is the RAM the expert store holds per K3 expert: the span
// rounded up to the 4096-byte alignment of direct reads, plus one block (a
// covering aligned range is at most one block longer at each end).
const storeBuffer = (ckpt.ExpertSpanBytes+4095)&^4095 + 4096

// StoreWorkingBytes is the RAM an expert store needs besides its cache: two
// layers' selections in flight and the default prefetch buffers (the
// engine plans the same for a model it streams).
func StoreWorkingBytes() int64 {
	return (2*k3TopK + 32) * storeBuffer
}
