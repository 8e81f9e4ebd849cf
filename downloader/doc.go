// Package downloader is the start of the data flow: it mirrors the model's
// hub repository into the data directory (sparse shards at their original
// offsets, with a crash-safe presence map per shard), verifies every byte
// against the hub's sizes and sha256, and serves missing expert ranges to the
// engine on demand through HTTP range requests.
package downloader
