package downloader

import (
	"fmt"
	"sort"
)

// A Range is the half-open byte interval [Start, End) of one file.
type Range struct {
	Start, End int64
}

// Len returns the number of bytes in r.
func (r Range) Len() int64 { return r.End - r.Start }

func (r Range) String() string { return fmt.Sprintf("[%d, %d)", r.Start, r.End) }

// rangeSet is a sorted list of disjoint, non-adjacent ranges. The zero value
// is empty. It is not safe for concurrent use; the owning fileState locks it.
type rangeSet []Range

// add inserts r, merging it with the ranges it touches.
func (s rangeSet) add(r Range) rangeSet {
	if r.Len() <= 0 {
		return s
	}
	out := make(rangeSet, 0, len(s)+1)
	i := 0
	for ; i < len(s) && s[i].End < r.Start; i++ {
		out = append(out, s[i])
	}
	for ; i < len(s) && s[i].Start <= r.End; i++ {
		r.Start = min(r.Start, s[i].Start)
		r.End = max(r.End, s[i].End)
	}
	out = append(out, r)
	return append(out, s[i:]...)
}

// missing returns the parts of r not covered by s, in order.
func (s rangeSet) missing(r Range) []Range {
	var out []Range
	pos := r.Start
	i := sort.Search(len(s), func(i int) bool { return s[i].End > r.Start })
	for ; i < len(s) && s[i].Start < r.End && pos < r.End; i++ {
		if s[i].Start > pos {
			out = append(out, Range{pos, s[i].Start})
		}
		pos = max(pos, s[i].End)
	}
	if pos < r.End {
		out = append(out, Range{pos, r.End})
	}
	return out
}

// covers reports whether every byte of r is in s.
func (s rangeSet) covers(r Range) bool { return len(s.missing(r)) == 0 }

// overlap returns how many bytes of r are in s.
func (s rangeSet) overlap(r Range) int64 {
	n := r.Len()
	for _, m := range s.missing(r) {
		n -= m.Len()
	}
	return n
}

// valid reports whether s is sorted, disjoint and inside [0, size).
func (s rangeSet) valid(size int64) bool {
	var prev int64 = -1
	for _, r := range s {
		if r.Start < 0 || r.End > size || r.Start >= r.End || r.Start <= prev {
			return false
		}
		prev = r.End
	}
	return true
}

// remove returns s without the bytes of r.
func (s rangeSet) remove(r Range) rangeSet {
	var out rangeSet
	for _, x := range s {
		if x.End <= r.Start || x.Start >= r.End {
			out = append(out, x)
			continue
		}
		if x.Start < r.Start {
			out = append(out, Range{x.Start, r.Start})
		}
		if x.End > r.End {
			out = append(out, Range{r.End, x.End})
		}
	}
	return out
}

// intersect returns the parts of s within r.
func (s rangeSet) intersect(r Range) []Range {
	var out []Range
	for _, x := range s {
		if x.End > r.Start && x.Start < r.End {
			out = append(out, Range{max(x.Start, r.Start), min(x.End, r.End)})
		}
	}
	return out
}
