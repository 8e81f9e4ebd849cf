package engine

import (
	"errors"
)

// Sentinel errors. Every error the engine returns wraps one of these, so a
// caller can tell a bad download from a bad request from a cancelled turn.
var (
	// ErrConfig: config.json is missing, malformed or describes a model this
	// engine does not run.
	ErrConfig = errors.New("engine: unsupported or malformed config")
	// ErrCheckpoint: a weight file disagrees with the config (missing,
	// unexpected, mis-shaped or mis-typed tensor, broken expert contiguity,
	// truncated or unreadable shard).
	ErrCheckpoint = errors.New("engine: checkpoint does not match config")
	// ErrInput: a token id outside the vocabulary or an empty prompt.
	ErrInput = errors.New("engine: bad input")
	// ErrDraft: a drafter that cannot be made (a --draft value out of
	// range, a drafter set too late).
	ErrDraft = errors.New("engine: bad drafter")
	// ErrStopped may be returned by an emit callback to end generation early;
	// Generate then reports FinishReason "stop" instead of an error.
	ErrStopped = errors.New("engine: generation stopped")
	// ErrClosed: the model was closed.
	ErrClosed = errors.New("engine: model closed")
	// ErrSampling marks sampling options out of range (sample.go).
	ErrSampling = errors.New("engine: invalid sampling")
	// ErrSpineInt8 marks a missing, partial or foreign int8 spine
	// (spineint8.go).
	ErrSpineInt8 = errors.New("engine: int8 spine")
)
