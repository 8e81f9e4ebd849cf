package server

import (
	"crypto/rand"
	"encoding/binary"
	"net/http"
	"strconv"

	"github.com/deltafin/deltafin/engine"
)

// Sampling on every endpoint: temperature, top_p, top_k, min_p and seed,
// as sent, become one engine.Sampling. A field not sent takes the model's
// default (engine.Info.Sampling: K3's model card, temperature 1.0 and
// top_p 0.95, unless generation_config.json says otherwise); temperature 0
// (or top_k 1) is greedy. Without a seed the server draws one. The seed
// used is reported in the X-Deltafin-Seed header of every generation and
// in the answer's "seed" field, so a client can repeat an answer exactly:
// the engine's random stream is keyed by (seed, token position).

// seedHeader carries the seed of a generation.
const seedHeader = "X-Deltafin-Seed"

// maxDrawnSeed bounds the seeds the server draws to 2^53 − 1, so that a
// JavaScript client (numbers are float64) can send one back exactly.
const maxDrawnSeed = 1<<53 - 1

// samplingFields are a request's sampling fields as sent (nil: not sent).
type samplingFields struct {
	temperature, topP, minP *float64
	topK                    *int
	seed                    *int64
}

// check range-checks the fields, naming the one at fault. A seed that is
// not an integer never gets here: the decoder refuses it (jsonError).
func (f samplingFields) check() *apiError {
	switch t, p, k, m := f.temperature, f.topP, f.topK, f.minP; {
	case t != nil && !(*t >= 0 && *t <= 2):
		return invalid(codeInvalidValue, "temperature", "must be between 0 and 2, got %g", *t)
	case p != nil && !(*p > 0 && *p <= 1):
		return invalid(codeInvalidValue, "top_p", "must be greater than 0 and at most 1, got %g", *p)
	case k != nil && *k < 0:
		return invalid(codeInvalidValue, "top_k", "must be 0 (off) or more, got %d", *k)
	case m != nil && !(*m >= 0 && *m <= 1):
		return invalid(codeInvalidValue, "min_p", "must be between 0 and 1, got %g", *m)
	}
	return nil
}

// sampling is a request's resolved sampling.
type sampling struct {
	engine.Sampling
	seed      int64 // as reported (Sampling.Seed holds its bits)
	seedGiven bool  // the client sent it
}

// resolve fills the fields not sent from def and draws a seed when none
// was sent.
func (f samplingFields) resolve(def engine.Sampling) sampling {
	s := sampling{Sampling: def}
	if f.temperature != nil {
		s.Temperature = *f.temperature
	}
	if f.topP != nil {
		s.TopP = *f.topP
	}
	if f.topK != nil {
		s.TopK = *f.topK
	}
	if f.minP != nil {
		s.MinP = *f.minP
	}
	if f.seed != nil {
		s.seed, s.seedGiven = *f.seed, true
	} else {
		var b [8]byte
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
		s.seed = int64(binary.LittleEndian.Uint64(b[:]) & maxDrawnSeed)
	}
	s.Seed = uint64(s.seed)
	return s
}

// memoizable reports whether the answer may be kept and replayed: a greedy
// one always, a sampled one only for the seed the client chose (a drawn
// seed would never be asked for again).
func (s sampling) memoizable() bool { return s.Greedy() || s.seedGiven }

// keyed is what the memo key holds: nothing of a greedy generation's
// settings (they do not change its tokens), all of a sampled one's.
func (s sampling) keyed() engine.Sampling {
	if s.Greedy() {
		return engine.Sampling{}
	}
	return s.Sampling
}

// report sets the seed header on the answer.
func (s sampling) report(h http.Header) {
	h.Set(seedHeader, strconv.FormatInt(s.seed, 10))
}

// storedSampling is a stored response's sampling (respRecord.Sampling):
// what a resumed job needs to continue the same random stream.
type storedSampling struct {
	Temperature float64 `json:"temperature"`
	TopP        float64 `json:"top_p"`
	TopK        int     `json:"top_k,omitempty"`
	MinP        float64 `json:"min_p,omitempty"`
	Seed        int64   `json:"seed"`
}

func (s sampling) stored() *storedSampling {
	return &storedSampling{Temperature: s.Temperature, TopP: s.TopP, TopK: s.TopK, MinP: s.MinP, Seed: s.seed}
}

// engine is the stored sampling for the engine; a record stored before
// sampling existed (nil) was greedy and resumes greedy.
func (s *storedSampling) engine() engine.Sampling {
	if s == nil {
		return engine.Sampling{}
	}
	return engine.Sampling{Temperature: s.Temperature, TopP: s.TopP, TopK: s.TopK, MinP: s.MinP, Seed: uint64(s.Seed)}
}
