// Package experts is how routed experts' bytes get from the SSD into RAM:
// the I/O half of streaming a checkpoint larger than RAM, kept apart from
// the forward pass's math (package engine), which only asks it for a layer's
// experts and views what it hands back. It sits below the engine and above
// the on-disk format (engine → experts → checkpoint, internal/directio);
// drives and bench use it without a model.
//
// The name is the unit it deals in: an expert, one contiguous span of a
// shard (ckpt.ExpertSpan, 17.5 MB in K3), read, cached, prefetched,
// replicated and ranked as a whole. It holds no tensor and no arithmetic;
// View is the one seam where a span becomes the kernels' matrices.
//
//	store.go      Store: the span store. Acquire a layer's experts, Prefetch
//	              guesses, PrefetchPart/PrefetchAhead certain later parts,
//	              PrefetchPrevious; buffers, the heat-ranked cache, eviction
//	read.go       the readers that carry out the store's chunk reads, from
//	              the mirror or a replica, and settle each expert
//	sched.go      the read scheduler: chunk reads spread over the mirror and
//	              the expert drives, demand before prefetch
//	shardfile.go  ShardFile: a shard opened for direct reads, Ensure first
//	              for a stream install's missing bytes (the spine ring's too)
//	drives.go     Drive and Replica: copies of experts on other disks;
//	              Spans, the experts of a checkpoint without a model
//	heat.go       the expert heat histogram, halved every N tokens, saved
//	meter.go      Meter: reads in flight and disk idle time (bench slice)
//	scales.go     CheckScales (NaN scale bytes) and View (span → matrices)
//
// The byte door (ckpt.Source, ckpt.Ensurer, ckpt.Presence) and the one
// parse of a checkpoint's index (ckpt.OpenIndex) are package checkpoint's,
// so that the engine, this package and the downloader share them; direct
// reads and aligned buffers are internal/directio's. Which experts a token
// uses is the router's alone: the store only changes where their bytes come
// from.
package experts
