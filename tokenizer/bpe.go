package tokenizer

import "math"

// BPE merging follows tiktoken's byte_pair_merge: start from single bytes
// and repeatedly merge the adjacent pair whose concatenation has the lowest
// rank, the leftmost on ties, until no pair is a token.
//
// Short pieces (nearly all of them) use tiktoken's own scan, which is
// quadratic in the piece but fastest when the piece is a word. Long pieces
// (a run of 25,000 identical characters is legal input) use a heap of
// candidate pairs with lazy deletion: O(n log n), same merges in the same
// order, because the heap orders by (rank, start offset) and a part's start
// offset orders parts exactly as tiktoken's index does.
const heapMergeMin = 128

const noRank = math.MaxInt

// bpe holds scratch space reused across the pieces of one encode call.
type bpe struct {
	start []int // scan: part start offsets; heap: next part's start, -1 when merged away
	rank  []int // scan: rank of the pair starting at part i
	prev  []int
	heap  []pairEntry
}

type pairEntry struct {
	rank, start, end int // the pair covers piece[start:end]
}

func (b *bpe) encode(ids []int, piece string, ranks map[string]int) []int {
	if len(piece) == 1 {
		return append(ids, ranks[piece])
	}
	if len(piece) >= heapMergeMin {
		return b.encodeHeap(ids, piece, ranks)
	}
	return b.encodeScan(ids, piece, ranks)
}

func pairRank(ranks map[string]int, piece string, a, b int) int {
	if r, ok := ranks[piece[a:b]]; ok {
		return r
	}
	return noRank
}

func (b *bpe) encodeScan(ids []int, piece string, ranks map[string]int) []int {
	n := len(piece)
	// parts[i] starts at start[i]; start has a sentinel n at the end.
	start := b.start[:0]
	rank := b.rank[:0]
	for i := 0; i <= n; i++ {
		start = append(start, i)
	}
	for i := 0; i < n-1; i++ {
		rank = append(rank, pairRank(ranks, piece, i, i+2))
	}
	rank = append(rank, noRank) // the last part has no right neighbour
	// get is the rank of parts i and i+1 merged, given that start already
	// reflects the merge being considered.
	get := func(i int) int {
		if i+2 < len(start) {
			return pairRank(ranks, piece, start[i], start[i+2])
		}
		return noRank
	}
	for len(start) > 2 {
		best, at := noRank, -1
		for i := 0; i < len(rank)-1; i++ {
			if rank[i] < best {
				best, at = rank[i], i
			}
		}
		if at < 0 {
			break
		}
		// Merge parts at and at+1: drop start[at+1] and rank[at+1].
		start = append(start[:at+1], start[at+2:]...)
		rank = append(rank[:at+1], rank[at+2:]...)
		rank[at] = get(at)
		if at > 0 {
			rank[at-1] = get(at - 1)
		}
	}
	for i := 0; i+1 < len(start); i++ {
		ids = append(ids, ranks[piece[start[i]:start[i+1]]])
	}
	b.start, b.rank = start, rank
	return ids
}

func (b *bpe) encodeHeap(ids []int, piece string, ranks map[string]int) []int {
	n := len(piece)
	// Parts are identified by their start offset: next[s] is the start of
	// the following part (n for the last), prev[s] of the preceding one, and
	// next[s] == -1 marks an offset that no longer starts a part.
	next := grow(b.start, n)
	prev := grow(b.prev, n)
	h := b.heap[:0]
	for i := range n {
		next[i], prev[i] = i+1, i-1
	}
	for i := 0; i+1 < n; i++ {
		if r := pairRank(ranks, piece, i, i+2); r != noRank {
			h = heapPush(h, pairEntry{r, i, i + 2})
		}
	}
	for len(h) > 0 {
		var e pairEntry
		e, h = heapPop(h)
		mid := next[e.start]
		if mid < 0 || mid >= n || next[mid] != e.end {
			continue // stale: one of the two parts has merged since
		}
		// Merge: the right part disappears.
		next[e.start] = e.end
		next[mid] = -1
		if e.end < n {
			prev[e.end] = e.start
		}
		if p := prev[e.start]; p >= 0 {
			if r := pairRank(ranks, piece, p, e.end); r != noRank {
				h = heapPush(h, pairEntry{r, p, e.end})
			}
		}
		if e.end < n {
			if r := pairRank(ranks, piece, e.start, next[e.end]); r != noRank {
				h = heapPush(h, pairEntry{r, e.start, next[e.end]})
			}
		}
	}
	for s := 0; s < n; s = next[s] {
		ids = append(ids, ranks[piece[s:next[s]]])
	}
	b.start, b.prev, b.heap = next, prev, h
	return ids
}

func grow(s []int, n int) []int {
	if cap(s) < n {
		return make([]int, n)
	}
	return s[:n]
}

func less(a, b pairEntry) bool {
	return a.rank < b.rank || a.rank == b.rank && a.start < b.start
}

func heapPush(h []pairEntry, e pairEntry) []pairEntry {
	h = append(h, e)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !less(h[i], h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	return h
}

func heapPop(h []pairEntry) (pairEntry, []pairEntry) {
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && less(h[l], h[m]) {
			m = l
		}
		if r < len(h) && less(h[r], h[m]) {
			m = r
		}
		if m == i {
			return top, h
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
