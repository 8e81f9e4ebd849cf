// Package store is Deltafin's durable state: one embedded database file,
// deltafin.db in the data directory, written by the server (the jobs of
// the job queue and the Responses API's stored responses) and kept across
// quits, kill -9 and reboots. It sits beside the server in the data flow
// (tokens → server → store): it knows requests, states, token ids and
// results as bytes, not the engine.
//
// The database is bbolt (go.etcd.io/bbolt): pure Go, so every build stays
// cgo-free where it can; one file with copy-on-write B+trees and an fsync
// per committed transaction, so a kill at any instant leaves the last
// committed state; one writer at a time, which is all one server needs; a
// file lock, so a second process cannot open the same store. SQLite
// through modernc.org/sqlite would do too, but brings a transpiled C
// library of several MB for queries this store never asks.
//
// Layout (schema version 1), one bucket per concept:
//
//	meta       "schema" → "1"
//	jobs       job id → Job as JSON (request, state, times, result)
//	tokens     job id → the job's generated token ids so far, uint32 little-endian each
//	pending    sequence (uint64 big-endian) → job id: the queued and running
//	           jobs in arrival order, what Open's caller resumes
//	conversations  conversation id → Conversation as JSON: the web page's
//	           chats, each turn naming the background response that answers it
//
// recover.go: a damaged file (empty, zeroed, truncated, pages bbolt cannot
// read) is checked for before bbolt maps it, moved aside as
// deltafin.db.damaged-<time>, and what can still be read is copied into a
// new file; Store.Recovered reports it.
//
// A bucket that a version does not know is left alone, so adding one (as
// conversations was) keeps schema 1: an older build opens the file and
// ignores it.
package store
