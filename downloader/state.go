package downloader

import (
	"errors"
	"fmt"
	"sort"
)

// The install's verification state. A byte on disk is verified when its
// whole file matched the hub's digest or, in a file held in part, its
// range matched the file's Xet hash (Coverage); any other byte on disk is
// present, not verified: a hub without Xet, a CAS answer this client
// cannot use, a window too wide to check on demand, a verifier
// disagreement (xetverify.go), or a complete file not yet hashed. Such
// bytes are never used silently: the engine's reads of them fail with
// ErrUnverified unless Options.AllowUnverified, and the app refuses to
// open an install that holds any (Unverified) unless told to allow them.

// ErrUnverified: bytes on disk that nothing has checked against the hub.
var ErrUnverified = errors.New("downloader: bytes present but not verified")

// Unverified is how many bytes of an install are present but not verified.
type Unverified struct {
	Bytes int64
	Files []string // the files holding them, sorted
}

func (u *Unverified) add(file string, n int64) {
	if n <= 0 {
		return
	}
	u.Bytes += n
	u.Files = append(u.Files, file)
	sort.Strings(u.Files)
}

// State is the install's verification state: "verified" or "unverified".
func (u Unverified) State() string {
	if u.Bytes > 0 {
		return "unverified"
	}
	return "verified"
}

// Err is nil when nothing is unverified, else ErrUnverified saying how
// much, where, and the ways out.
func (u Unverified) Err() error {
	if u.Bytes == 0 {
		return nil
	}
	where := u.Files[0]
	if len(u.Files) > 1 {
		where = fmt.Sprintf("%s and %d other files", where, len(u.Files)-1)
	}
	return fmt.Errorf("%w: the install is unverified: %s in %s could not be checked against the hub (no Xet hash for a file held in part, or the check could not run); run `deltafin fetch-experts` to complete the files and verify them by their sha256, or pass --allow-unverified to use them as they are", ErrUnverified, FormatBytes(u.Bytes), where)
}

// Unverified measures the bytes of the mirror's files that are present
// and not verified.
func (m *Mirror) Unverified() (Unverified, error) {
	var u Unverified
	m.mu.Lock()
	names := make([]string, 0, len(m.entries))
	for name := range m.entries {
		names = append(names, name)
	}
	m.mu.Unlock()
	for _, name := range names {
		fs, err := m.file(name)
		if err != nil {
			return u, err
		}
		fs.mu.Lock()
		present := fs.pres.Ranges.total()
		verified := fs.pres.XetVerified.total()
		if fs.pres.Verified != "" && fs.pres.Verified == digestOf(fs.entry) {
			verified = present
		}
		fs.mu.Unlock()
		u.add(name, present-verified)
	}
	return u, nil
}

// total is how many bytes the set covers.
func (s rangeSet) total() int64 {
	var n int64
	for _, r := range s {
		n += r.Len()
	}
	return n
}
