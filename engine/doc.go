// Package engine is the Kimi K3 forward pass: downloader → disk → engine →
// kernels → tokens → server/app.
//
// A Model is immutable and shared: the validated config, the tensor index
// over the checkpoint's safetensors shards, and the weight stores. A Session
// is one conversation's caches (KDA and conv states, the MLA latent cache,
// the position). Weights are read through a byte Source, so a model far
// larger than RAM streams its routed experts from disk; nothing outside this
// package sees a tensor.
package engine
