package server

import (
	"container/list"
	"crypto/sha256"
	"encoding/binary"
	"math"
	"sync"

	"github.com/deltafin/deltafin/engine"
)

// memo remembers recent generations exactly: the same prompt tokens with
// the same limits and sampling (greedy, or sampled with the same seed)
// always give the same tokens, and a repeated request (a client retrying,
// an editor re-asking) can be answered from memory instead of minutes of
// expert streaming. The key is the engine's whole input (prompt ids, token
// limit, stop ids and stop sequences, and a sampled generation's settings
// and seed), so a chat and a completion that reduce to the same tokens
// share an entry. A sampled answer whose seed the server drew is not kept
// (sampling.memoizable). Bounded by entries and bytes, least recently used
// first out.
type memo struct {
	mu         sync.Mutex
	maxEntries int
	maxBytes   int64
	bytes      int64
	order      *list.List // of *memoEntry, most recent first
	index      map[memoKey]*list.Element
}

type memoKey [sha256.Size]byte

// memoValue is a finished generation.
type memoValue struct {
	tokens []int
	finish string // "stop" | "length"
}

type memoEntry struct {
	key  memoKey
	val  memoValue
	size int64
}

// memoEntryOverhead approximates an entry's bookkeeping (list element, map
// slot, key) so that many tiny entries are still bounded by bytes.
const memoEntryOverhead = 160

// newMemo returns a memo of at most maxEntries entries and maxBytes bytes;
// maxEntries 0 gives a memo that remembers nothing.
func newMemo(maxEntries int, maxBytes int64) *memo {
	return &memo{maxEntries: maxEntries, maxBytes: maxBytes, order: list.New(), index: map[memoKey]*list.Element{}}
}

// keyOf hashes the engine input. Lengths are written before each list so
// that no two inputs share an encoding.
func keyOf(prompt []int, maxNew int, stop []int, stopText ...string) memoKey {
	h := sha256.New()
	var b [8]byte
	put := func(v int) {
		binary.LittleEndian.PutUint64(b[:], uint64(v))
		h.Write(b[:])
	}
	put(len(prompt))
	for _, t := range prompt {
		put(t)
	}
	put(maxNew)
	put(len(stop))
	for _, t := range stop {
		put(t)
	}
	put(len(stopText))
	for _, s := range stopText {
		put(len(s))
		h.Write([]byte(s))
	}
	var k memoKey
	h.Sum(k[:0])
	return k
}

// withSampling extends a greedy generation's key with a sampled one's
// settings and seed; the zero Sampling (greedy) leaves it as it is.
func (k memoKey) withSampling(s engine.Sampling) memoKey {
	if s == (engine.Sampling{}) {
		return k
	}
	h := sha256.New()
	h.Write(k[:])
	var b [8]byte
	for _, v := range []uint64{math.Float64bits(s.Temperature), math.Float64bits(s.TopP), uint64(s.TopK), math.Float64bits(s.MinP), s.Seed} {
		binary.LittleEndian.PutUint64(b[:], v)
		h.Write(b[:])
	}
	var out memoKey
	h.Sum(out[:0])
	return out
}

func (m *memo) get(k memoKey) (memoValue, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	el, ok := m.index[k]
	if !ok {
		return memoValue{}, false
	}
	m.order.MoveToFront(el)
	return el.Value.(*memoEntry).val, true
}

// put stores a finished generation; one larger than the byte budget is not
// stored at all.
func (m *memo) put(k memoKey, v memoValue) {
	size := int64(len(v.tokens))*8 + memoEntryOverhead
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.maxEntries <= 0 || size > m.maxBytes {
		return
	}
	if el, ok := m.index[k]; ok {
		m.remove(el)
	}
	v.tokens = append([]int(nil), v.tokens...)
	m.index[k] = m.order.PushFront(&memoEntry{key: k, val: v, size: size})
	m.bytes += size
	for m.order.Len() > m.maxEntries || m.bytes > m.maxBytes {
		m.remove(m.order.Back())
	}
}

func (m *memo) remove(el *list.Element) {
	e := m.order.Remove(el).(*memoEntry)
	delete(m.index, e.key)
	m.bytes -= e.size
}

// len reports the number of entries and their bytes.
func (m *memo) len() (int, int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.order.Len(), m.bytes
}
