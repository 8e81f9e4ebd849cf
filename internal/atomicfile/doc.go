// Package atomicfile replaces small files (state, manifests, presence maps,
// heat counts, model metadata) so that a crash or a failed write leaves the
// old content or the new one, never a torn file. It is a leaf used by app,
// engine and downloader wherever they write a whole file to disk.
package atomicfile
