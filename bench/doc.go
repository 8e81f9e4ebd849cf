// Package bench holds Deltafin's benchmarks and synthetic checkpoints,
// apart from the product packages that run a token: it drives them
// through their public API only (downloader → disk → engine → kernels →
// tokens, measured from outside). Kernels is `deltafin bench kernels`: the
// memory read limit (kernels.MemoryRead) and the fp32 FMA peak
// (kernels.FMAPeak), and every kernel's weight bandwidth and every
// matmul's arithmetic against them, on K3's shapes. Prefill is `deltafin
// bench prefill`: synthetic prompts through a model's Session, in seconds
// and as a ratio of the arithmetic engine.Info counts to the FMA peak.
// BenchDrives (`bench slice --drive-gbps`) is the read scheduler over
// simulated drives; `bench slice --draft oracle:R,…` decodes with T = 1 and
// the oracle drafter (slice_draft.go); ProjectK3 (`bench project`) the
// full K3's s/token on a machine, term by term, and ProjectDraft the same
// with drafting (project_draft.go); TraceHitRates (`bench heat`) the expert cache's
// hit rate on a recorded router trace. The synthetic loops of `bench
// slice` (random routes, the disk's read rate, the read-only replay of a
// decode) drive the expert store, package experts, directly (probe.go,
// slice_engine.go's ioOnlyRate); the engine runs go through engine.Open.
package bench
