// Package checkpoint is the on-disk format of a Kimi K3 checkpoint, the one
// place both sides of the disk learn it from: the downloader (which divides
// each shard into the spine it fetches now and the routed experts it fetches
// on demand) and the engine (which validates, loads and streams the same
// bytes). It sits on the disk in the data flow (downloader → disk → engine)
// and imports nothing of ours but the standard library.
//
//	safetensors/  the bounded, fuzzed parser of safetensors headers and indexes
//	names.go      tensor names: the multimodal text prefix, decoder layers,
//	              the parts of one routed expert
//	experts.go    routed expert spans: ExpertID, ExpertSpan, IndexExperts
//
// A K3 routed expert is six U8 tensors back to back in one shard (w1, w2, w3
// MXFP4 nibbles, each followed by its e8m0 scales), so that an expert is one
// read from disk and, in a stream install, one HTTP range request.
package checkpoint
