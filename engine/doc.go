// Package engine is the Kimi K3 forward pass: downloader → disk → engine →
// kernels → tokens → server/app.
//
// Open reads a model directory as Moonshot publishes it (config.json with
// model_type kimi_k3 or kimi_linear, safetensors shards with their index),
// validates every tensor's name, dtype and shape against the config and the
// byte contiguity of each MXFP4 routed expert, and loads the weights. A Model
// is immutable and shared; a Session is one conversation's state (KDA conv
// and recurrent states, the MLA key/value cache, tokens not yet run), and
// Session.Generate decodes from it, greedily or by seeded sampling
// (GenerateOptions.Sampling, sample.go).
//
// Activations and accumulation are fp32; BF16 and MXFP4 weights are widened
// exactly. Every matrix product goes through a kernels.Backend over the
// stored bytes, and so does the arithmetic of the KDA delta rule
// (kernels.RunDeltaRule, one head over a block of tokens: its SIMD kernel
// where the backend has one, kda.go's kdaHeads spreads the heads) and of
// its short conv + SiLU (kernels.RunShortConv, a block of channels over
// the tokens; kda.go's shortConv spreads the channels), and of the
// exps and sigmoids of the KDA's gates, β and decays and of the MLA output
// gate (kernels.RunElementwise, a worker's rows a call); the other
// elementwise operations (norms, the router's σ, softmax) live here, one
// file per concept:
//
//	config.go      config.json → config (every size comes from here)
//	errors.go      the sentinel errors every returned error wraps
//	checkpoint.go  shards, index, tensor lookup; roster.go: what must be there
//	finite.go      the NaN/Inf scan of float weights as they load
//	weights.go     the spine; experts.go: the expert store seam and the RAM store
//	spineload.go   the pinned spine read in parallel, direct, checked as it lands
//	attnres.go     Block Attention Residuals
//	kda.go         Kimi Delta Attention (its conv and recurrence in kernels); kda_chunk.go:
//	               its chunked prefill
//	mla.go         multi-head latent attention (NoPE), its attention in kernels' tiles
//	moe.go, mlp.go router, routed and shared experts, dense MLP
//	norm.go        RMS norm and the elementwise helpers
//	model.go       Open and the decoder; session.go, generate.go
//	attend.go      every pass's attention, chunk by chunk: one chunk for a
//	               decode step or a speculative pass; a prompt before
//	               streamed experts also routes each chunk, so its experts'
//	               reads start while later chunks attend
//	heads.go       attention heads spread over the cores (bit-identical)
//	flops.go       a pass's arithmetic, for bench prefill's ratio to the peak
//	spec.go        n-gram speculation's guesses; SpecStats (passes, drafts, bytes)
//	verify.go      verify passes of T positions, exact; keep rolls the
//	               KDA state and the MLA caches back to any position
//	draft.go       the drafter interface: what it sees of the target (taps,
//	               observe), what it proposes; Draft, Options.Draft
//	oracle.go      the oracle drafter (--draft oracle:R) and ParseDraft
//	price.go       how many tokens to draft per pass, priced in bytes read
//	drafter.go     the EAGLE-3 MLA drafter's config, checkpoint and weights
//	               (docs/DRAFTER.md); drafter_rope.go its YaRN rotary,
//	               drafter_attn.go its latent attention and cache,
//	               drafter_step.go its rows, observe and propose
//	preload.go     the pinned spine copied to a GPU that keeps it, from Open on
//	budget.go      Model.SetCacheBudget: the expert cache shrunk while running
//	               (the RAM plan itself is experts.PlanBudget)
//	sample.go      temperature, top_k, top_p, min_p on float64 probabilities;
//	               the random stream keyed by (seed, token position)
//	spineint8.go   the opt-in, non-exact int8 spine (convert-spine-int8)
//	spinering.go   spine layers past the pinned prefix, streamed (STREAMING.md)
//	streaming.go   StreamOptions, the streamed expert store behind the seam,
//	               the PILOT lookahead prefetch
//	trace.go       the router trace (--trace)
//	expertmap.go   ExpertMap: where each expert is, for the web page
//	stats.go       Model.Stats: bytes read, cache and prefetch hits, disk idle
//
// The expert store, its read scheduler, the expert drives, the heat
// histogram, the I/O meter and the RAM plan are package experts'; the byte
// Source and the index parse package checkpoint's; direct reads
// internal/directio's. Nothing of the engine's math (attention, the
// router, the expert FFNs) is in them, and they import nothing of the
// engine.
//
// A prompt runs expert-major: every position of a layer is routed first,
// then each selected expert is read once and applied to all the positions
// that chose it (moe.go). SPEEDUPS.md has the design and the figures.
//
// Weights are read through ckpt.Source. Streaming is not invisible to the
// forward pass: it enters it at the expert store's seam (experts.go), the
// one interface the pass sees, whatever the store: start at each layer
// (model.go; the store may prefetch the previous token's experts), acquire
// (moe.go; the store reads the rest of a prompt's union ahead), want
// (attend.go: a chunk's experts as it is routed; streaming.go: the next
// layer's guess), and fromDisk, which turns on the early routing and the
// guess; and at the spine ring's get and release per streamed layer
// (model.go). Which experts a token uses, and so the
// output, is the router's alone. Nothing outside this package sees a
// tensor.
package engine
