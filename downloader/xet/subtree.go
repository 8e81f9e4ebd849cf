package xet

import (
	"encoding/json"
	"errors"
	"fmt"
)

// A Subtree summarises the Merkle tree of a run of a file's chunks without
// its chunks (xet-core's MerkleHashSubtree, which the CAS sends for the
// parts of a file a client does not hold): at each level, the nodes near
// its left edge (Left) and near its right edge (Right) whose grouping
// depends on chunks outside the run stay open; everything between is
// grouped and promoted to the next level. Merging the subtrees of adjacent
// runs, left to right, closes what their edges left open; once a subtree
// reaches both ends of the file, its one top node is the file's Merkle
// root. So a client that holds a range can check it against the file's
// hash: the CAS summarises the rest, the client hashes its own bytes.
type Subtree struct {
	Left, Right    [][]Chunk // per level, bottom (chunks) first
	AtStart, AtEnd bool      // the run starts (ends) the file
}

// ErrSubtree: subtrees that cannot be merged or closed.
var ErrSubtree = errors.New("xet: subtree")

// NewSubtree summarises chunks, a run of a file that starts the file when
// atStart and ends it when atEnd.
func NewSubtree(atStart bool, chunks []Chunk, atEnd bool) *Subtree {
	s := &Subtree{AtStart: atStart, AtEnd: atEnd}
	current := chunks
	lefts, rights := true, true // every level so far has empty lefts (rights)
	for {
		prefix, suffix, up := splitAndPromote(current, atStart && lefts, atEnd && rights)
		s.push(current[:prefix], current[len(current)-suffix:])
		lefts = lefts && prefix == 0
		rights = rights && suffix == 0
		if len(up) == 0 {
			break
		}
		if len(up) == 1 {
			s.push(up, nil)
			break
		}
		current = up
	}
	return s
}

func (s *Subtree) push(left, right []Chunk) {
	s.Left = append(s.Left, append([]Chunk(nil), left...))
	s.Right = append(s.Right, append([]Chunk(nil), right...))
}

// Empty reports whether the subtree covers no chunk.
func (s *Subtree) Empty() bool {
	for i := range s.Left {
		if len(s.Left[i])+len(s.Right[i]) > 0 {
			return false
		}
	}
	return true
}

// Merge appends other, the run right after s's, to s.
func (s *Subtree) Merge(other *Subtree) error {
	if s.AtEnd || other.AtStart {
		return fmt.Errorf("%w: merging a run that ends the file with one after it, or one before a run that starts it", ErrSubtree)
	}
	out := &Subtree{AtStart: s.AtStart, AtEnd: other.AtEnd}
	at := func(ls [][]Chunk, i int) []Chunk {
		if i < len(ls) {
			return ls[i]
		}
		return nil
	}
	lefts, rights := true, true
	var carry []Chunk
	for i := range max(len(s.Left), len(other.Left)) {
		var full []Chunk
		full = append(full, at(s.Left, i)...)
		full = append(full, at(s.Right, i)...)
		full = append(full, carry...)
		full = append(full, at(other.Left, i)...)
		full = append(full, at(other.Right, i)...)
		prefix, suffix, up := splitAndPromote(full, out.AtStart && lefts, out.AtEnd && rights)
		out.push(full[:prefix], full[len(full)-suffix:])
		lefts = lefts && prefix == 0
		rights = rights && suffix == 0
		carry = up
	}
	for len(carry) > 0 {
		if len(carry) == 1 {
			out.push(carry, nil)
			break
		}
		prefix, suffix, up := splitAndPromote(carry, out.AtStart && lefts, out.AtEnd && rights)
		out.push(carry[:prefix], carry[len(carry)-suffix:])
		lefts = lefts && prefix == 0
		rights = rights && suffix == 0
		carry = up
	}
	for len(out.Left) > 1 && len(out.Left[len(out.Left)-1])+len(out.Right[len(out.Right)-1]) == 0 {
		out.Left, out.Right = out.Left[:len(out.Left)-1], out.Right[:len(out.Right)-1]
	}
	*s = *out
	return nil
}

// FileHash is the file's Xet hash, once the subtree spans the whole file.
func (s *Subtree) FileHash() (Hash, error) {
	if !s.AtStart || !s.AtEnd {
		return Hash{}, fmt.Errorf("%w: does not span the whole file", ErrSubtree)
	}
	if s.Empty() {
		return Hash{}, nil
	}
	top := len(s.Left) - 1
	for i := range top {
		if len(s.Left[i])+len(s.Right[i]) > 0 {
			return Hash{}, fmt.Errorf("%w: a closed subtree has open nodes below its top", ErrSubtree)
		}
	}
	if len(s.Left[top]) != 1 || len(s.Right[top]) != 0 {
		return Hash{}, fmt.Errorf("%w: a closed subtree's top level has %d nodes", ErrSubtree, len(s.Left[top])+len(s.Right[top]))
	}
	return fileHashOfRoot(s.Left[top][0].Hash), nil
}

// splitAndPromote divides one level's nodes into an open prefix and suffix
// (their grouping depends on nodes outside the run, unless the run starts
// or ends the file there) and a stable middle, which it groups into the
// next level's nodes. A level with no stable middle stays open whole.
func splitAndPromote(nodes []Chunk, atStart, atEnd bool) (prefix, suffix int, up []Chunk) {
	if len(nodes) <= 1 {
		return len(nodes), 0, nil
	}
	start := 0
	if !atStart {
		var ok bool
		if start, ok = stableStart(nodes); !ok {
			return len(nodes), 0, nil
		}
	}
	end := len(nodes)
	if !atEnd {
		e, ok := stableEnd(nodes[start:])
		if !ok {
			return len(nodes), 0, nil
		}
		end = start + e
	}
	if start >= end {
		return len(nodes), 0, nil
	}
	return start, len(nodes) - end, promote(nodes[start:end])
}

// validGap: two natural cuts this far apart are a node that nextCut closes
// at the second whatever came before the first.
func validGap(g int) bool { return g > minGroup && g < maxGroup-1 }

// stableStart is the first index at which grouping is the same whatever
// nodes precede the run: just after the second of two consecutive valid
// gaps between natural cuts.
func stableStart(nodes []Chunk) (int, bool) {
	if len(nodes) < minGroup+1 {
		return 0, false
	}
	prev, prevPrev := -1, -1
	for i, n := range nodes {
		if !naturalCut(n.Hash) {
			continue
		}
		if prev >= 0 && validGap(i-prev) && prevPrev >= 0 && validGap(prev-prevPrev) {
			return prev + 1, true
		}
		prevPrev, prev = prev, i
	}
	return 0, false
}

// stableEnd is stableStart's mirror: the end of the last node whose
// grouping is the same whatever nodes follow the run.
func stableEnd(nodes []Chunk) (int, bool) {
	if len(nodes) < minGroup+1 {
		return 0, false
	}
	next, nextNext := -1, -1
	for i := len(nodes) - 1; i >= 0; i-- {
		if !naturalCut(nodes[i].Hash) {
			continue
		}
		if next >= 0 && validGap(next-i) && nextNext >= 0 && validGap(nextNext-next) {
			return next + 1, true
		}
		nextNext, next = next, i
	}
	return 0, false
}

// The wire form (xet-core's serde of MerkleHashSubtree): the left nodes of
// every level bottom up, then the right nodes top down, with each level's
// counts.
type wireNode struct {
	Hash Hash  `json:"hash"`
	Size int64 `json:"size"`
}

type wireSubtree struct {
	Nodes   []wireNode `json:"nodes"`
	Levels  [][2]int   `json:"levels"`
	AtStart bool       `json:"at_start"`
	AtEnd   bool       `json:"at_end"`
}

func (s *Subtree) MarshalJSON() ([]byte, error) {
	w := wireSubtree{Nodes: []wireNode{}, Levels: [][2]int{}, AtStart: s.AtStart, AtEnd: s.AtEnd}
	for i := range s.Left {
		w.Levels = append(w.Levels, [2]int{len(s.Left[i]), len(s.Right[i])})
		for _, c := range s.Left[i] {
			w.Nodes = append(w.Nodes, wireNode{c.Hash, c.Len})
		}
	}
	for i := len(s.Right) - 1; i >= 0; i-- {
		for _, c := range s.Right[i] {
			w.Nodes = append(w.Nodes, wireNode{c.Hash, c.Len})
		}
	}
	return json.Marshal(w)
}

func (s *Subtree) UnmarshalJSON(b []byte) error {
	var w wireSubtree
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("%w: %v", ErrSubtree, err)
	}
	total := 0
	for _, l := range w.Levels {
		if l[0] < 0 || l[1] < 0 || l[0] > len(w.Nodes) || l[1] > len(w.Nodes) {
			return fmt.Errorf("%w: a level's counts %v exceed its %d nodes", ErrSubtree, l, len(w.Nodes))
		}
		total += l[0] + l[1]
	}
	if total != len(w.Nodes) {
		return fmt.Errorf("%w: levels count %d nodes, the subtree has %d", ErrSubtree, total, len(w.Nodes))
	}
	node := func(n wireNode) Chunk { return Chunk{n.Hash, n.Size} }
	out := Subtree{AtStart: w.AtStart, AtEnd: w.AtEnd}
	pos := 0
	for _, l := range w.Levels {
		var left []Chunk
		for _, n := range w.Nodes[pos : pos+l[0]] {
			left = append(left, node(n))
		}
		out.Left = append(out.Left, left)
		pos += l[0]
	}
	out.Right = make([][]Chunk, len(w.Levels))
	for i := len(w.Levels) - 1; i >= 0; i-- {
		for _, n := range w.Nodes[pos : pos+w.Levels[i][1]] {
			out.Right[i] = append(out.Right[i], node(n))
		}
		pos += w.Levels[i][1]
	}
	for _, n := range w.Nodes {
		if n.Size < 0 {
			return fmt.Errorf("%w: a node of %d bytes", ErrSubtree, n.Size)
		}
	}
	*s = out
	return nil
}
