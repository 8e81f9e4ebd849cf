package sourcetest

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	ckpt "github.com/deltafin/deltafin/checkpoint"
)

// A Fixture is one opened source and what the suite knows about it.
type Fixture struct {
	Src ckpt.Source
	// Path is the local file behind Src, which the engine's preads read.
	Path string
	// Want is the file's whole content, from elsewhere (the hub's copy).
	Want []byte
	// Missing is a range [off, off+n) that is not on disk at open (a
	// stream install's expert); n is 0 for a complete source.
	Missing [2]int64
	// Fetches counts the remote fetches so far (the hub's range requests);
	// nil for a local source.
	Fetches func() int64
}

// Run runs every case against fresh fixtures: open is called once per case
// (so a stream install starts with its experts missing each time).
func Run(t *testing.T, open func(t *testing.T) Fixture) {
	cases := []struct {
		name string
		run  func(t *testing.T, f Fixture)
	}{
		{"full read", fullRead},
		{"reads at the end", readsAtTheEnd},
		{"reads past the end are rejected", pastTheEnd},
		{"ensure then pread equals ReadAt", ensureThenPread},
		{"concurrent reads", concurrentReads},
		{"cancelled context", cancelled},
		{"a missing range is fetched once, a present one never", fetchedOnce},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := open(t)
			require.Equal(t, int64(len(f.Want)), f.Src.Size(), "Size is the file's length")
			c.run(t, f)
		})
	}
}

func fullRead(t *testing.T, f Fixture) {
	got := make([]byte, f.Src.Size())
	require.NoError(t, f.Src.ReadAt(t.Context(), got, 0))
	require.True(t, bytes.Equal(f.Want, got), "the whole file reads back")
}

func readsAtTheEnd(t *testing.T, f Fixture) {
	size := f.Src.Size()
	for _, n := range []int64{0, 1, 7, 4097} {
		n = min(n, size)
		got := make([]byte, n)
		require.NoError(t, f.Src.ReadAt(t.Context(), got, size-n), "the last %d bytes", n)
		require.True(t, bytes.Equal(f.Want[size-n:], got), "the last %d bytes", n)
	}
}

func pastTheEnd(t *testing.T, f Fixture) {
	size := f.Src.Size()
	for _, r := range []struct {
		name   string
		off, n int64
	}{
		{"one byte past", size - 1, 2},
		{"starts at the end", size, 1},
		{"starts past the end", size + 10, 1},
		{"negative offset", -1, 1},
	} {
		err := f.Src.ReadAt(t.Context(), make([]byte, r.n), r.off)
		require.Error(t, err, r.name)
		require.ErrorContains(t, err, strconv.FormatInt(size, 10), "%s: the error names the file's size", r.name)
		if e, ok := f.Src.(ckpt.Ensurer); ok {
			require.Error(t, e.Ensure(t.Context(), r.off, r.n), "Ensure: %s", r.name)
		}
	}
}

// ensureThenPread: after Ensure (or at once, for a source without it) a
// pread of the local file returns the bytes ReadAt returns.
func ensureThenPread(t *testing.T, f Fixture) {
	size := f.Src.Size()
	ranges := [][2]int64{{0, min(size, 64)}, {size / 3, min(size-size/3, 8192)}, {size - 1, 1}}
	if f.Missing[1] > 0 {
		ranges = append(ranges, f.Missing)
	}
	file, err := os.Open(f.Path)
	require.NoError(t, err)
	defer file.Close()
	if m := f.Missing; m[1] > 0 {
		// The fixture is what it says: before Ensure a pread of the
		// missing range does not read the file's bytes.
		hole := make([]byte, m[1])
		_, err := file.ReadAt(hole, m[0])
		require.NoError(t, err)
		require.False(t, bytes.Equal(f.Want[m[0]:m[0]+m[1]], hole), "[%d,+%d) is on disk before Ensure", m[0], m[1])
	}
	for _, r := range ranges {
		if e, ok := f.Src.(ckpt.Ensurer); ok {
			require.NoError(t, e.Ensure(t.Context(), r[0], r[1]))
		}
		pread := make([]byte, r[1])
		_, err := file.ReadAt(pread, r[0])
		require.NoError(t, err)
		read := make([]byte, r[1])
		require.NoError(t, f.Src.ReadAt(t.Context(), read, r[0]))
		require.True(t, bytes.Equal(read, pread), "[%d,+%d): pread and ReadAt agree", r[0], r[1])
		require.True(t, bytes.Equal(f.Want[r[0]:r[0]+r[1]], read), "[%d,+%d): the file's bytes", r[0], r[1])
	}
}

func concurrentReads(t *testing.T, f Fixture) {
	size := f.Src.Size()
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for g := range errs {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 16)) // fixed seed per reader
			for range 32 {
				off := rng.Int64N(size)
				n := rng.Int64N(min(size-off, 1<<16)) + 1
				if g%2 == 0 && f.Missing[1] > 0 {
					off, n = f.Missing[0], f.Missing[1] // half the readers race on the missing range
				}
				got := make([]byte, n)
				if err := f.Src.ReadAt(t.Context(), got, off); err != nil {
					errs[g] = err
					return
				}
				if !bytes.Equal(f.Want[off:off+n], got) {
					errs[g] = errors.New("reader " + strconv.Itoa(g) + ": wrong bytes at " + strconv.FormatInt(off, 10))
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
}

// cancelled: a cancelled context fails the call with context.Canceled, and
// nothing is fetched.
func cancelled(t *testing.T, f Fixture) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	r := [2]int64{0, min(f.Src.Size(), 64)}
	if f.Missing[1] > 0 {
		r = f.Missing
	}
	before := fetches(f)
	require.ErrorIs(t, f.Src.ReadAt(ctx, make([]byte, r[1]), r[0]), context.Canceled)
	if e, ok := f.Src.(ckpt.Ensurer); ok {
		require.ErrorIs(t, e.Ensure(ctx, r[0], r[1]), context.Canceled)
	}
	require.Equal(t, before, fetches(f), "nothing fetched for a cancelled call")
}

// fetchedOnce: concurrent readers of a missing range share one fetch, and
// later reads fetch nothing; a source with nothing missing fetches nothing
// at all.
func fetchedOnce(t *testing.T, f Fixture) {
	if f.Missing[1] == 0 || f.Fetches == nil {
		before := fetches(f)
		require.NoError(t, f.Src.ReadAt(t.Context(), make([]byte, f.Src.Size()), 0))
		require.Equal(t, before, fetches(f), "a complete source fetches nothing")
		return
	}
	before := f.Fetches()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for g := range errs {
		wg.Go(func() {
			got := make([]byte, f.Missing[1])
			if e, ok := f.Src.(ckpt.Ensurer); ok && g%2 == 1 {
				errs[g] = e.Ensure(t.Context(), f.Missing[0], f.Missing[1])
				return
			}
			errs[g] = f.Src.ReadAt(t.Context(), got, f.Missing[0])
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, before+1, f.Fetches(), "one fetch for the missing range")
	require.NoError(t, f.Src.ReadAt(t.Context(), make([]byte, f.Missing[1]), f.Missing[0]))
	require.Equal(t, before+1, f.Fetches(), "present now: read from disk")
}

func fetches(f Fixture) int64 {
	if f.Fetches == nil {
		return 0
	}
	return f.Fetches()
}
