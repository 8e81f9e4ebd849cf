// Package sourcetest is the contract of a checkpoint.Source, as one suite
// that every byte source runs: the plain file (checkpoint.FileSource), a
// drive's replica file (internal/directio.File), the downloader's mirror over
// the fake hub's HTTP range requests, in a full install and in a stream
// install whose experts are missing, and the app's sources over a folder or
// an installed mirror. It sits beside the checkpoint package, on the test
// side.
//
// The engine reads headers and the resident spine with ReadAt, and the
// expert store (package experts) the streamed bytes with its own direct
// preads of the file at the source's path, after Ensure when the source is a
// checkpoint.Ensurer; so the suite checks both doors give the same bytes.
package sourcetest
