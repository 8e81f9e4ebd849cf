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
// stored bytes; the elementwise operations (norms, gates, the short conv,
// the delta rule, softmax) live here, one file per concept:
//
//	config.go      config.json → config (every size comes from here)
//	source.go      Source: the bytes of one checkpoint file
//	checkpoint.go  shards, index, tensor lookup; roster.go: what must be there
//	weights.go     the spine; experts.go: the routed-expert store
//	spineload.go   the pinned spine read in parallel, direct, checked as it lands
//	attnres.go     Block Attention Residuals
//	kda.go         Kimi Delta Attention; kda_chunk.go: its chunked prefill
//	mla.go         multi-head latent attention (NoPE), its attention in kernels' tiles
//	moe.go, mlp.go router, routed and shared experts, dense MLP
//	model.go       Open and the decoder; session.go, generate.go
//	heads.go       attention heads spread over the cores (bit-identical)
//	posblock.go    long prompts' batched products in blocks of positions
//	spec.go        exact n-gram speculation (two-position verify passes)
//	sample.go      temperature, top_k, top_p, min_p on float64 probabilities;
//	               the random stream keyed by (seed, token position)
//	spineint8.go   the opt-in, non-exact int8 spine (convert-spine-int8)
//	spinering.go   spine layers past the pinned prefix, streamed (STREAMING.md)
//	stats.go       Model.Stats: bytes read, cache and prefetch hits, disk idle
//	probe.go       the expert store without a model, for bench slice
//	drives.go      ExpertDrive: replicas of experts on other disks
//	readsched.go   the expert reads spread over the mirror and the drives;
//	               expertread.go: the readers that carry them out
//	heat.go        the expert heat histogram, halved every N tokens
//
// A prompt runs expert-major: every position of a layer is routed first,
// then each selected expert is read once and applied to all the positions
// that chose it (moe.go). SPEEDUPS.md has the design and the figures.
//
// Weights are read through Source and routed experts through a small
// store, so the streaming layer can pin the spine and stream experts from
// disk without changing the forward pass. Nothing outside this package sees
// a tensor.
package engine
