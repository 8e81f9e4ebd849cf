package engine

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"time"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/experts"
	"github.com/deltafin/deltafin/internal/directio"
	"github.com/deltafin/deltafin/kernels"
)

// Options configures Open.
type Options struct {
	// Backend runs the matrix products; nil means kernels.Default().
	Backend kernels.Backend
	// OpenSource opens each checkpoint file; nil means OpenFile (pread on a
	// local file). The streaming layer and the downloader plug in here.
	OpenSource ckpt.OpenSource
	// Stream, when set, streams what the RAM budget does not hold: routed
	// MXFP4 experts through an expert store, spine layers past the pinned
	// prefix per pass (streaming.go). Nil loads the whole model into RAM.
	Stream *StreamOptions
	// SpineInt8, when set, is a directory written by ConvertSpineInt8
	// (SpineInt8Dir): the spine's matrices are read from its int8 copy,
	// half the bytes, NOT exact (--spine int8; spineint8.go).
	SpineInt8 string
	// NoSpec turns n-gram speculation off (spec.go; DELTAFIN_SPEC=0).
	// Speculation never changes the tokens, only how many passes they take.
	NoSpec bool
	// Draft, when set, drafts for every session (draft.go): its guesses
	// fill what n-gram speculation does not guess, verified exactly.
	Draft Draft
}

// Info describes an opened model.
type Info struct {
	ID         string // "deltafin-kimi-k3" for kimi_k3, else the directory's base name
	ModelType  string // root model_type
	VocabSize  int
	EOS, BOS   int // -1 when the config has none
	ContextLen int
	Layers     int
	Hidden     int
	Experts    int // routed experts per MoE layer
	TopK       int
	Backend    string
	// Sampling is what a request that names no sampling gets: K3's model
	// card (temperature 1.0, top_p 0.95), with what generation_config.json
	// sets of temperature, top_p, top_k and min_p (sample.go).
	Sampling Sampling
	// Draft names the drafter every session drafts with (Options.Draft):
	// "" for n-gram speculation alone.
	Draft string
	// SpineBytes is the RAM the whole spine and the globals take loaded
	// (the int8 copy's size with Options.SpineInt8), pinned or not.
	SpineBytes int64
	// The arithmetic of a pass, for benchmarks (floating-point operations,
	// estimated from the shapes; flops.go): TokenFLOPs per position through
	// the layers, HeadFLOPs per row of logits, PairFLOPs of attention per
	// (query, key) pair. A prefill of T tokens does about
	// T·TokenFLOPs + HeadFLOPs + T(T+1)/2·PairFLOPs.
	TokenFLOPs, HeadFLOPs, PairFLOPs int64
}

// Model is an opened checkpoint: validated config, spine weights and the
// expert store. It is immutable and safe for concurrent Sessions.
type Model struct {
	cfg     *config
	info    Info
	ck      *checkpoint
	w       *weights
	experts expertStore
	backend kernels.Backend
	closed  atomic.Bool
	// pinned is the number of spine layers in RAM; layers from pinned on are
	// read per pass, one layer ahead of compute.
	pinned      int
	spine       *spineRing    // streams layers pinned.., or nil
	io          experts.Meter // reads in flight of the store and the ring
	plan        experts.BudgetPlan
	routerTrace *traceWriter
	noSpec      bool
	draft       Draft       // Options.Draft
	i8          *checkpoint // the int8 spine, or nil
	heads       headSplit   // attention heads over the cores
	openStats   OpenStats
	expertWait  atomic.Int64 // ns the passes waited for expert bytes (Stats.ExpertWait)
	preload     *preloader   // the pinned spine copied to a GPU (preload.go), or nil
}

// Open reads dir/config.json, opens the safetensors shards, validates every
// tensor's name, dtype and shape against the config (and the byte contiguity
// of each MXFP4 expert), and loads the weights. The router trace
// (StreamOptions.TracePath) is started before any weight is read.
func Open(ctx context.Context, dir string, opts Options) (*Model, error) {
	if opts.Backend == nil {
		opts.Backend = kernels.Default()
	}
	if opts.OpenSource == nil {
		opts.OpenSource = ckpt.OpenFile
	}
	m := &Model{backend: opts.Backend, noSpec: opts.NoSpec, draft: opts.Draft}
	var err error
	if opts.Stream != nil && opts.Stream.TracePath != "" {
		if m.routerTrace, err = createTrace(opts.Stream.TracePath); err != nil {
			return nil, err
		}
	}
	fail := func(err error) (*Model, error) {
		if m.ck != nil {
			m.ck.close()
		}
		if m.i8 != nil {
			m.i8.close()
		}
		if m.routerTrace != nil {
			m.routerTrace.Close()
		}
		return nil, err
	}
	start := time.Now()
	if m.cfg, m.ck, err = openIndex(ctx, dir, opts.OpenSource); err != nil {
		return fail(err)
	}
	if m.info.Sampling, err = defaultSampling(dir); err != nil {
		return fail(err)
	}
	m.pinned = m.cfg.Layers
	m.openStats.IndexSeconds = time.Since(start).Seconds()
	if opts.SpineInt8 != "" {
		if m.i8, err = openSpineInt8(ctx, opts.SpineInt8, m.ck); err != nil {
			return fail(err)
		}
	}
	if err := m.load(ctx, dir, opts.Stream); err != nil {
		return fail(err)
	}
	m.startPreload()
	return m, nil
}

func (m *Model) load(ctx context.Context, dir string, stream *StreamOptions) error {
	var err error
	if stream != nil {
		plan, err := m.planStreaming(stream)
		if err != nil {
			return err
		}
		m.plan, m.pinned = plan, min(plan.PinnedLayers, m.cfg.Layers)
	}
	var view map[*tensorRef][]byte
	if m.i8 == nil {
		// The resident spine, read in parallel and checked as it lands
		// (spineload.go). The int8 spine's matrices come from its own
		// checkpoint, through the plain loader.
		byLayer, refs := m.ck.spineTensors(m.cfg)
		for _, l := range byLayer[:m.pinned] {
			refs = append(refs, l...)
		}
		mode := directio.Direct
		if stream != nil {
			mode = stream.mode
		}
		var st OpenStats
		view, st, err = loadPinned(ctx, dir, refs, mode)
		st.IndexSeconds, m.openStats = m.openStats.IndexSeconds, st
		if err != nil {
			return err
		}
	}
	w, err := loadWeights(ctx, m.ck, m.i8, m.cfg, m.pinned, view)
	if err != nil {
		return err
	}
	m.w = w
	if stream != nil && m.pinned < m.cfg.Layers {
		if m.spine, err = newSpineRing(ctx, dir, m.ck, m.i8, m.cfg, m.pinned, stream.mode, &m.io); err != nil {
			return err
		}
	}
	if stream != nil && m.cfg.ExpertsMXFP4 && m.cfg.Experts > 0 {
		m.experts, err = openStreamExperts(ctx, dir, m.ck, m.cfg, stream, m.plan.CacheExperts, &m.io, m.spine != nil)
	} else {
		m.experts, err = loadRAMExperts(ctx, m.ck, m.cfg)
	}
	if err != nil {
		if m.spine != nil {
			m.spine.close()
		}
		return err
	}
	c := m.cfg
	id := filepath.Base(filepath.Clean(dir))
	if c.ModelType == "kimi_k3" {
		id = "deltafin-kimi-k3"
	}
	m.info = Info{
		ID: id, ModelType: c.ModelType, VocabSize: c.Vocab, EOS: c.EOS, BOS: c.BOS,
		ContextLen: c.ContextLen, Layers: c.Layers, Hidden: c.Hidden,
		Experts: c.Experts, TopK: c.TopK, Backend: m.backend.Name(), Sampling: m.info.Sampling,
	}
	m.info.TokenFLOPs, m.info.HeadFLOPs, m.info.PairFLOPs = c.flops()
	m.info.Draft = m.draft.Name()
	layers, globals := m.spineRAMBytes()
	m.info.SpineBytes = globals
	for _, b := range layers {
		m.info.SpineBytes += b
	}
	return nil
}

// Plan returns the RAM budget the model was opened with (zero without
// streaming), for printing at startup.
func (m *Model) Plan() experts.BudgetPlan { return m.plan }

// Info returns the model's description.
func (m *Model) Info() Info { return m.info }

// Close releases the checkpoint files and puts the router trace in place.
// Sessions must not be used afterwards.
func (m *Model) Close() error {
	if m.closed.Swap(true) {
		return nil
	}
	m.preload.stop()
	var err error
	if m.spine != nil {
		err = m.spine.close()
	}
	if m.experts != nil {
		if cerr := m.experts.close(); err == nil {
			err = cerr
		}
	}
	if cerr := m.ck.close(); err == nil {
		err = cerr
	}
	if m.i8 != nil {
		if cerr := m.i8.close(); err == nil {
			err = cerr
		}
	}
	if m.routerTrace != nil {
		if cerr := m.routerTrace.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// traceFunc observes the embeddings (layer = −1), the residual stream after
// each layer ([T, H]) and the final-norm output (layer = Layers), for
// layer-by-layer debugging.
type traceFunc func(layer int, h []float32)

// forward runs T new tokens through the decoder, updating the session's
// caches, and returns the logits [rows, V] of every position (every) or of
// the last one.
//
// The residual stream follows Block Attention Residuals when configured
// (docs/MODEL.md §5.3):
//
//	a_in = blocks empty ? partial : AttnRes(blocks + [partial])
//	at a block boundary: blocks += [partial]; partial = none
//	partial += Attention(RMSNorm(a_in))
//	partial += MLP(RMSNorm(AttnRes(blocks + [partial])))
//
// and otherwise the plain pre-norm residual (a_in = m_in = partial).
func (m *Model) forward(ctx context.Context, s *Session, ids []int, every bool, trace traceFunc) ([]float32, error) {
	c, w := m.cfg, m.w
	T, H := len(ids), c.Hidden
	be := m.backend
	if s.verifying {
		// A speculative pass must give each position the bits a decode
		// step would: one row at a time, in the single-row kernels.
		be = rowByRow{m.backend}
	}
	partial := make([]float32, T*H) // [T, H]
	for t, id := range ids {
		kernels.DecodeRow(partial[t*H:(t+1)*H], w.embed, id)
	}
	if trace != nil {
		trace(-1, partial)
	}
	tapAt := s.tapsFor(T)  // layer → the drafter's tap, or nil
	var blocks [][]float32 // completed block sums, each [T, H]
	mix := func(res attnResWeights) []float32 { return m.mixRows(blocks, partial, res, 0, T) }
	x := make([]float32, T*H)
	y := make([]float32, T*H)
	// Spine layers past the pinned prefix come from the ring (spinering.go):
	// layer i+1 loads while layer i computes, and the first streamed layer
	// of the next pass while the last one and lm_head compute.
	var cur *spineLoad
	if m.spine != nil {
		m.spine.pass.Lock()
		defer m.spine.pass.Unlock()
		defer func() {
			if cur != nil {
				m.spine.release(cur)
			}
		}()
	}
	for i := range w.layers {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		m.experts.start(i, T)
		lw := &w.layers[i]
		if i >= m.pinned {
			ld, err := m.spine.get(ctx, i)
			if err != nil {
				return nil, err
			}
			cur, lw = ld, &ld.lw
		}
		aIn := mix(lw.attnRes)
		if c.AttnResBlock > 0 && i%c.AttnResBlock == 0 {
			blocks = append(blocks, partial)
			partial = nil
		}
		rmsNormRows(x, aIn, lw.inNorm, c.Eps, H)
		if partial == nil {
			partial = make([]float32, T*H)
		}
		// Attention, chunk by chunk (attend.go); a prompt before streamed
		// experts also routes each chunk, its experts read while the next
		// chunk's attention runs, and then needs its own MLP input buffer.
		mlpIn := x
		if m.routesEarly(s, lw, T) {
			mlpIn = make([]float32, T*H)
		}
		routes, order, err := m.attend(ctx, be, s, i, lw, x, y, partial, mlpIn, blocks, T)
		if err != nil {
			return nil, err
		}
		if lw.moe != nil {
			if err := m.moeForward(ctx, be, y, mlpIn, T, i, s.pos, lw.moe, routes, order); err != nil {
				return nil, err
			}
		} else {
			m.ffn(be, y, *lw.mlp, mlpIn, T)
		}
		add(partial, y)
		if cur != nil {
			// Nothing below holds the layer's weights: its slot can load
			// the next streamed layer.
			m.spine.release(cur)
			cur = nil
		}
		if trace != nil {
			trace(i, partial)
		}
		if tapAt != nil && tapAt[i] >= 0 {
			tapHidden(s.tapBuf[tapAt[i]], s.tapBlocks(blocks), partial)
		}
	}

	// Tail: final AttnRes, norm and lm_head, for the rows asked for.
	f := mix(w.outRes)
	rows := T
	if !every {
		f, rows = f[(T-1)*H:], 1
	}
	rmsNormRows(x[:rows*H], f, w.norm, c.Eps, H)
	if trace != nil {
		trace(c.Layers, x[:rows*H])
	}
	logits := make([]float32, rows*c.Vocab)
	if s.verifying {
		// A draft's row is only needed when the draft is the token picked
		// from the row before it: the rows after a rejected draft skip
		// lm_head (verify.go).
		V := c.Vocab
		for t := range rows {
			be.MatMul(logits[t*V:(t+1)*V], w.lmHead, x[t*H:(t+1)*H], 1)
			if !s.verifyPick(t, logits[t*V:(t+1)*V]) {
				return logits[:(t+1)*V], nil
			}
		}
		return logits, nil
	}
	be.MatMul(logits, w.lmHead, x[:rows*H], rows)
	return logits, nil
}
