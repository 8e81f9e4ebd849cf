// Package sourcetest is the contract of an engine.Source, as one suite that
// every byte source runs: the plain file (engine), and the downloader's
// mirror over the fake hub's HTTP range requests, in a full install and in a
// stream install whose experts are missing. It sits beside the engine in the
// data flow (downloader → disk → engine), on the test side.
//
// The engine reads headers and the resident spine with ReadAt, and the
// streamed bytes with its own direct preads of the file at the source's
// path, after Ensure when the source is an engine.Ensurer; so the suite
// checks both doors give the same bytes.
package sourcetest
