package downloader

import "fmt"

// Coverage is how much of a set of work is on disk and how much of that is
// verified against what the hub publishes: a byte is verified when its
// whole file matched the hub's digest (sha256, or the git blob id of a
// small file), or, in a file held only in part (a stream install's
// shards), when its range matched the file's Xet hash (xetverify.go).
// Bytes of a file the hub keeps without Xet are present but not verified
// until the file is complete.
type Coverage struct {
	Total, Present, Verified int64
}

// Coverage measures work against the presence maps and verified marks.
func (m *Mirror) Coverage(work []Work) (Coverage, error) {
	var c Coverage
	for _, w := range work {
		fs, err := m.file(w.File)
		if err != nil {
			return c, err
		}
		fs.mu.Lock()
		n := fs.pres.Ranges.overlap(w.Range)
		v := fs.pres.XetVerified.overlap(w.Range)
		if fs.pres.Verified != "" && fs.pres.Verified == digestOf(fs.entry) {
			v = n
		}
		fs.mu.Unlock()
		c.Total += w.Len()
		c.Present += n
		c.Verified += v
	}
	return c, nil
}

// AllVerified reports whether every byte of the work is present and verified.
func (c Coverage) AllVerified() bool { return c.Verified == c.Total }

// String says it as the user reads it: "100% present, 62% verified"
// (percentages truncated, so 100% means all of it).
func (c Coverage) String() string {
	pct := func(n int64) int64 {
		if c.Total == 0 {
			return 100
		}
		return n * 100 / c.Total
	}
	return fmt.Sprintf("%d%% present, %d%% verified", pct(c.Present), pct(c.Verified))
}

// SpineWork returns the spine ranges of the plan's shards (headers and
// every tensor that is not a routed expert).
func (p *Plan) SpineWork() []Work {
	var out []Work
	for _, f := range p.Files {
		for _, r := range f.Spine {
			out = append(out, Work{f.Path, r})
		}
	}
	return out
}
