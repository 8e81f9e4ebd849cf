package experts

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/checkpoint/safetensors"
	"github.com/deltafin/deltafin/internal/directio"
)

// Tiny experts: inter 64, latent 96 → a 9,792-byte span, so spans start and
// end off the 4096-byte grid and the covering aligned range is exercised.
const (
	tinyInter  = 64
	tinyLatent = 96
)

func tinyExperts(layer, n int) []safetensors.Tensor {
	return syntheticExperts(layer, n, tinyInter, tinyLatent)
}

// writeTinyModel writes one shard per layer (a spine tensor, then n
// experts) and returns the directory and the expert index.
func writeTinyModel(t testing.TB, layers []int, n int) (string, map[ckpt.ExpertID]ckpt.ExpertSpan) {
	dir := t.TempDir()
	spans := map[ckpt.ExpertID]ckpt.ExpertSpan{}
	for i, l := range layers {
		name := fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, len(layers))
		ts := append([]safetensors.Tensor{{Name: fmt.Sprintf("language_model.model.layers.%d.mlp.gate.weight", l), DType: "BF16", Shape: []int64{12, 4}}},
			tinyExperts(l, n)...)
		writeSyntheticShard(t, filepath.Join(dir, name), ts, uint64(i+11))
		f, err := os.Open(filepath.Join(dir, name))
		require.NoError(t, err)
		st, err := f.Stat()
		require.NoError(t, err)
		h, err := safetensors.Read(f, st.Size())
		require.NoError(t, f.Close())
		require.NoError(t, err)
		sp, err := ckpt.IndexExperts(name, h)
		require.NoError(t, err)
		require.Len(t, sp, n)
		for id, s := range sp {
			require.Equal(t, ckpt.ExpertSpanSize(tinyInter, tinyLatent), s.Size)
			spans[id] = s
		}
	}
	return dir, spans
}

func spanBytes(t testing.TB, dir string, sp ckpt.ExpertSpan) []byte {
	b, err := os.ReadFile(filepath.Join(dir, sp.Shard))
	require.NoError(t, err)
	return b[sp.Offset : sp.Offset+sp.Size]
}

func TestExpertStoreReadsTheBytesOnDisk(t *testing.T) {
	t.Parallel()
	dir, spans := writeTinyModel(t, []int{1, 2}, 12)
	for _, tc := range []struct {
		name  string
		mode  directio.Mode
		cache int
		chunk int
	}{
		{"direct, no cache", directio.Direct, 0, 0},
		{"direct, cache 5", directio.Direct, 5, 0},
		{"direct, 4096-byte chunks", directio.Direct, 0, 4096},
		{"direct, 5000-byte chunks round up", directio.Direct, 2, 5000},
		{"buffered", directio.Buffered, 3, 0},
		{"buffered, chunks", directio.Buffered, 0, 4096},
		{"drop-behind", directio.DropBehind, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(t.Context(), Options{Dir: dir, Spans: spans, Mode: tc.mode, CacheExperts: tc.cache, Readers: 4, ChunkBytes: tc.chunk})
			require.NoError(t, err)
			defer s.Close()
			// Every expert, including the first and the last of each shard
			// (whose covering aligned range runs past the end of the file),
			// several times, from concurrent callers.
			var wg sync.WaitGroup
			for g := range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for round := range 3 {
						layer := 1 + (g+round)%2
						ids := []int{11, 0, 5, 3, 7, 1, 10, 2, 4, 6, 8, 9}
						b, err := s.Acquire(t.Context(), layer, ids)
						if !(assertNoError(t, err)) {
							return
						}
						for i, e := range ids {
							got, err := b.Wait(t.Context(), i)
							if assertNoError(t, err) {
								require.Equal(t, spanBytes(t, dir, spans[ckpt.ExpertID{Layer: layer, Expert: e}]), got, "layer %d expert %d", layer, e)
							}
						}
						b.Release()
					}
				}()
			}
			wg.Wait()
			st := s.Stats()
			require.LessOrEqual(t, st.CachedNow, tc.cache)
			require.Equal(t, int64(3*3*12), st.Misses+st.CacheHits+st.SpecHits+st.Shared)
		})
	}
}

// assertNoError reports err without stopping a goroutine that is not the test's.
func assertNoError(t *testing.T, err error) bool {
	if err != nil {
		t.Errorf("unexpected error: %v", err)
		return false
	}
	return true
}

func TestAlignedRangeEdgeCases(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name           string
		off, n         int64
		wantLo, wantHi int64
	}{
		{"aligned start and end", 8192, 4096, 8192, 12288},
		{"unaligned start", 8200, 4088, 8192, 12288},
		{"unaligned end", 8192, 4100, 8192, 16384},
		{"both unaligned across blocks", 4095, 2, 0, 8192},
		{"zero offset", 0, 1, 0, 4096},
		{"K3 span at an odd offset", 8 + 1234568, ckpt.ExpertSpanBytes, 1232896, 18784256},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lo, hi := directio.AlignDown(tc.off), directio.AlignUp(tc.off+tc.n)
			require.Equal(t, tc.wantLo, lo)
			require.Equal(t, tc.wantHi, hi)
			require.LessOrEqual(t, hi-lo, directio.AlignUp(tc.n)+directio.Align, "a store buffer must hold the covering range")
		})
	}
	b := directio.Buffer(12345)
	require.Len(t, b, 12345)
	require.Zero(t, directio.Addr(b)%directio.BufAlign)
}

func TestExpertCacheKeepsTheHottest(t *testing.T) {
	t.Parallel()
	dir, spans := writeTinyModel(t, []int{1}, 8)
	heat := NewHeat(2, 8)
	// Experts 6 and 7 are hot from earlier runs.
	for range 50 {
		heat.Touch(1, []int{6, 7})
	}
	s, err := Open(t.Context(), Options{Dir: dir, Spans: spans, Heat: heat, CacheExperts: 2, Readers: 2})
	require.NoError(t, err)
	defer s.Close()
	use := func(ids ...int) {
		b, err := s.Acquire(t.Context(), 1, ids)
		require.NoError(t, err)
		for i := range ids {
			_, err := b.Wait(t.Context(), i)
			require.NoError(t, err)
		}
		b.Release()
	}
	use(0, 1) // the empty cache admits them
	require.Equal(t, 2, s.Stats().CachedNow)
	use(6) // hotter than 0 and 1: evicts one of them
	use(7) // and the other
	before := s.Stats()
	use(6, 7)
	after := s.Stats()
	require.Equal(t, int64(2), after.CacheHits-before.CacheHits, "6 and 7 stay cached")
	use(2, 3) // colder than 6 and 7: not admitted
	before = s.Stats()
	use(6, 7, 2)
	after = s.Stats()
	require.Equal(t, int64(2), after.CacheHits-before.CacheHits)
	require.Equal(t, int64(1), after.Misses-before.Misses)
	require.Equal(t, 2, after.CachedNow)
}

func TestPrefetchNeverChangesTheExperts(t *testing.T) {
	t.Parallel()
	dir, spans := writeTinyModel(t, []int{1, 2}, 10)
	s, err := Open(t.Context(), Options{Dir: dir, Spans: spans, Readers: 3, PrefetchExperts: 4})
	require.NoError(t, err)
	defer s.Close()
	s.Prefetch(2, []int{0, 1, 2, 3, 4, 5}) // only 4 fit the prefetch budget
	ids := []int{3, 9, 1}
	b, err := s.Acquire(t.Context(), 2, ids)
	require.NoError(t, err)
	for i, e := range ids {
		got, err := b.Wait(t.Context(), i)
		require.NoError(t, err)
		require.Equal(t, spanBytes(t, dir, spans[ckpt.ExpertID{Layer: 2, Expert: e}]), got)
	}
	b.Release()
	st := s.Stats()
	require.Equal(t, int64(4), st.SpecReads)
	require.Equal(t, int64(2), st.SpecHits, "3 and 1 were prefetched")
	require.Equal(t, int64(1), st.Misses)
	require.Equal(t, int64(2), st.SpecWasted, "0 and 2 were wrong guesses")
	require.Zero(t, st.CachedNow)
}

// A prefill's next group is certain: with every buffer of the budget taken
// (a full cache and a held batch), a guess is skipped but the next group's
// read evicts the coldest cached expert and starts.
func TestPrefetchPartEvictsWhereAGuessWaits(t *testing.T) {
	t.Parallel()
	dir, spans := writeTinyModel(t, []int{1}, 40)
	s, err := Open(t.Context(), Options{Dir: dir, Spans: spans, CacheExperts: 2, PrefetchExperts: 1, Readers: 2})
	require.NoError(t, err)
	defer s.Close()
	wait := func(b *Batch, n int) {
		for i := range n {
			_, err := b.Wait(t.Context(), i)
			require.NoError(t, err)
		}
	}
	b, err := s.Acquire(t.Context(), 1, []int{0, 1})
	require.NoError(t, err)
	wait(b, 2)
	b.Release()
	require.Equal(t, 2, s.Stats().CachedNow)
	// 2 cached + 33 held = the budget's 2 + 1 + 2·16 buffers, none free.
	var held []int
	for e := 2; e < 35; e++ {
		held = append(held, e)
	}
	hb, err := s.Acquire(t.Context(), 1, held)
	require.NoError(t, err)
	wait(hb, len(held))
	defer hb.Release()

	s.Prefetch(1, []int{35})
	require.Zero(t, s.Stats().SpecReads, "a guess only takes free buffers")
	s.PrefetchPart(1, []int{35})
	st := s.Stats()
	require.Equal(t, int64(1), st.SpecReads, "the next group's read starts")
	require.Equal(t, 1, st.CachedNow, "by evicting a cached expert")

	b, err = s.Acquire(t.Context(), 1, []int{35})
	require.NoError(t, err)
	got, err := b.Wait(t.Context(), 0)
	require.NoError(t, err)
	require.Equal(t, spanBytes(t, dir, spans[ckpt.ExpertID{Layer: 1, Expert: 35}]), got)
	b.Release()
	require.Equal(t, int64(1), s.Stats().SpecHits)
}

// copySource is a shard of a sparse mirror that Ensure fills from the
// complete file, as the downloader's Source fills it from the hub.
type copySource struct {
	ckpt.Source // the sparse file, for ReadAt and Size
	src, dst    string
	mu          sync.Mutex
	calls       int
}

func (c *copySource) Ensure(_ context.Context, off, n int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	b, err := os.ReadFile(c.src)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(c.dst, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(b[off:off+n], off); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// TestEnsurerFillsMissingExperts: a shard whose Source is an Ensurer (an
// installed mirror) has each expert made present with one Ensure of its
// span, then read in chunks on the scheduler like a plain file's.
func TestEnsurerFillsMissingExperts(t *testing.T) {
	t.Parallel()
	src, spans := writeTinyModel(t, []int{1}, 6)
	mirror := t.TempDir()
	name := spans[ckpt.ExpertID{Layer: 1, Expert: 0}].Shard
	full, err := os.ReadFile(filepath.Join(src, name))
	require.NoError(t, err)
	// A stream-mode mirror: the shard at full size, holes where experts are.
	dst := filepath.Join(mirror, name)
	require.NoError(t, os.WriteFile(dst, nil, 0o644))
	require.NoError(t, os.Truncate(dst, int64(len(full))))
	sparse, err := ckpt.OpenFile(t.Context(), dst)
	require.NoError(t, err)
	defer sparse.(*ckpt.FileSource).Close()
	shard := &copySource{Source: sparse, src: filepath.Join(src, name), dst: dst}
	s, err := Open(t.Context(), Options{Dir: mirror, Spans: spans, Sources: map[string]ckpt.Source{name: shard}, Readers: 2, ChunkBytes: 4096})
	require.NoError(t, err)
	defer s.Close()
	b, err := s.Acquire(t.Context(), 1, []int{4, 2})
	require.NoError(t, err)
	defer b.Release()
	for i, e := range []int{4, 2} {
		got, err := b.Wait(t.Context(), i)
		require.NoError(t, err)
		require.Equal(t, spanBytes(t, src, spans[ckpt.ExpertID{Layer: 1, Expert: e}]), got)
	}
	require.Equal(t, 2, shard.calls, "one Ensure per expert")
	chunks := 0
	for _, e := range []int{4, 2} {
		chunks += len(s.chunks(&entry{id: ckpt.ExpertID{Layer: 1, Expert: e}}, true))
	}
	require.GreaterOrEqual(t, chunks, 6, "a 9,792-byte span is three 4 KiB chunks or more")
	require.Equal(t, int64(chunks), s.Stats().Drives[0].Reads, "read in chunks, the Ensure not counted as one")
}

func TestTruncatedShardNamesTheExpert(t *testing.T) {
	t.Parallel()
	dir, spans := writeTinyModel(t, []int{3}, 6)
	victim := ckpt.ExpertID{Layer: 3, Expert: 2}
	sp := spans[victim]
	cut := sp.Offset + sp.Size/2
	t.Run("at open", func(t *testing.T) {
		d := t.TempDir()
		b, err := os.ReadFile(filepath.Join(dir, sp.Shard))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(d, sp.Shard), b[:cut], 0o644))
		_, err = Open(t.Context(), Options{Dir: d, Spans: spans})
		require.ErrorIs(t, err, ckpt.ErrTruncated)
		require.ErrorContains(t, err, fmt.Sprintf("inside layer 3 expert 2 (bytes %d to %d)", sp.Offset, sp.Offset+sp.Size))
		require.ErrorContains(t, err, sp.Shard)
	})
	t.Run("while running", func(t *testing.T) {
		d := t.TempDir()
		b, err := os.ReadFile(filepath.Join(dir, sp.Shard))
		require.NoError(t, err)
		path := filepath.Join(d, sp.Shard)
		require.NoError(t, os.WriteFile(path, b, 0o644))
		s, err := Open(t.Context(), Options{Dir: d, Spans: spans, Readers: 2, ChunkBytes: 4096})
		require.NoError(t, err)
		defer s.Close()
		require.NoError(t, os.Truncate(path, cut))
		batch, err := s.Acquire(t.Context(), 3, []int{2})
		require.NoError(t, err)
		_, err = batch.Wait(t.Context(), 0)
		batch.Release()
		require.ErrorIs(t, err, ckpt.ErrTruncated)
		require.ErrorContains(t, err, "layer 3 expert 2")
		// Once the file is whole again the expert reads: errors are not cached.
		require.NoError(t, os.WriteFile(path, b, 0o644))
		batch, err = s.Acquire(t.Context(), 3, []int{2})
		require.NoError(t, err)
		got, err := batch.Wait(t.Context(), 0)
		require.NoError(t, err)
		require.Equal(t, b[sp.Offset:sp.Offset+sp.Size], got)
		batch.Release()
	})
}

func TestAcquireRejectsBadSelections(t *testing.T) {
	t.Parallel()
	dir, spans := writeTinyModel(t, []int{1}, 4)
	s, err := Open(t.Context(), Options{Dir: dir, Spans: spans})
	require.NoError(t, err)
	for _, tc := range []struct {
		name  string
		layer int
		ids   []int
		want  string
	}{
		{"unknown expert", 1, []int{0, 4}, "layer 1 expert 4 is not in the checkpoint"},
		{"unknown layer", 2, []int{0}, "layer 2 expert 0 is not in the checkpoint"},
		{"duplicate", 1, []int{1, 2, 1}, "selects expert 1 twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Acquire(t.Context(), tc.layer, tc.ids)
			require.ErrorContains(t, err, tc.want)
		})
	}
	require.NoError(t, s.Close())
	_, err = s.Acquire(t.Context(), 1, []int{0})
	require.ErrorIs(t, err, ErrClosed)
}

func TestExpertMatricesViewTheSpan(t *testing.T) {
	t.Parallel()
	b := make([]byte, ckpt.ExpertSpanBytes)
	e, err := View(b, 3072, 3584)
	require.NoError(t, err)
	for _, m := range []struct {
		name string
		err  error
	}{{"w1", e.W1.Validate()}, {"w2", e.W2.Validate()}, {"w3", e.W3.Validate()}} {
		require.NoError(t, m.err, m.name)
	}
	// The K3 offsets inside the span (docs/MODEL.md §4.3).
	base := directio.Addr(b)
	require.Equal(t, uintptr(5_849_088), directio.Addr(e.W2.Data)-base)
	require.Equal(t, uintptr(11_354_112), directio.Addr(e.W2.Scales)-base)
	require.Equal(t, uintptr(17_203_200), directio.Addr(e.W3.Scales)-base)
	_, err = View(b[:100], 3072, 3584)
	require.True(t, errors.Is(err, ckpt.ErrExpertLayout))
}

func TestPrefetchPreviousReadsTheLastSelection(t *testing.T) {
	t.Parallel()
	dir, spans := writeTinyModel(t, []int{1}, 10)
	s, err := Open(t.Context(), Options{Dir: dir, Spans: spans, Readers: 2})
	require.NoError(t, err)
	defer s.Close()
	s.PrefetchPrevious(1) // nothing selected yet: nothing to do
	require.Zero(t, s.Stats().SpecReads)
	b, err := s.Acquire(t.Context(), 1, []int{4, 8})
	require.NoError(t, err)
	for i := range 2 {
		_, err := b.Wait(t.Context(), i)
		require.NoError(t, err)
	}
	b.Release() // no cache: both buffers are reused
	s.PrefetchPrevious(1)
	require.Equal(t, int64(2), s.Stats().SpecReads)
	b, err = s.Acquire(t.Context(), 1, []int{8, 5})
	require.NoError(t, err)
	got, err := b.Wait(t.Context(), 0)
	require.NoError(t, err)
	require.Equal(t, spanBytes(t, dir, spans[ckpt.ExpertID{Layer: 1, Expert: 8}]), got)
	b.Release()
	st := s.Stats()
	require.Equal(t, int64(1), st.SpecHits)
	require.Equal(t, int64(1), st.SpecWasted, "4 was not chosen again")
}

func TestWrongPrefetchesStopReading(t *testing.T) {
	t.Parallel()
	dir, spans := writeTinyModel(t, []int{1}, 12)
	// One reader and 4096-byte chunks: a prefetch of 8 experts queues about
	// 24 chunk reads, most still queued when the router decides.
	s, err := Open(t.Context(), Options{Dir: dir, Spans: spans, Readers: 1, ChunkBytes: 4096, PrefetchExperts: 8})
	require.NoError(t, err)
	defer s.Close()
	s.Prefetch(1, []int{0, 1, 2, 3, 4, 5, 6, 7})
	b, err := s.Acquire(t.Context(), 1, []int{11})
	require.NoError(t, err)
	got, err := b.Wait(t.Context(), 0)
	require.NoError(t, err)
	require.Equal(t, spanBytes(t, dir, spans[ckpt.ExpertID{Layer: 1, Expert: 11}]), got)
	b.Release()
	// Every entry finishes, read or skipped.
	require.Eventually(t, func() bool { return s.Stats().Reads == 9 }, 10*time.Second, time.Millisecond)
	st := s.Stats()
	require.Equal(t, int64(8), st.SpecWasted)
	// Reading all nine experts would take at least 9 × 12288 bytes; the
	// demanded one and the chunks in flight take at most about three.
	require.Less(t, st.DiskBytes, 4*directio.AlignUp(ckpt.ExpertSpanSize(tinyInter, tinyLatent)), "dropped prefetches were not read to the end")
}

// failingEnsure is a sparse shard whose fetches fail (the hub unreachable).
type failingEnsure struct{ ckpt.Source }

var errNoHub = errors.New("no hub")

func (failingEnsure) Ensure(context.Context, int64, int64) error { return errNoHub }

// TestFailedEnsureFailsTheExpertNotTheDrive: a fetch that fails fails the
// expert's Wait with the fetch's error, naming the expert; the mirror stays
// in service and a later Acquire tries again.
func TestFailedEnsureFailsTheExpertNotTheDrive(t *testing.T) {
	t.Parallel()
	dir, spans := writeTinyModel(t, []int{1}, 4)
	name := spans[ckpt.ExpertID{Layer: 1, Expert: 0}].Shard
	src, err := ckpt.OpenFile(t.Context(), filepath.Join(dir, name))
	require.NoError(t, err)
	defer src.(*ckpt.FileSource).Close()
	s, err := Open(t.Context(), Options{Dir: dir, Spans: spans, Sources: map[string]ckpt.Source{name: failingEnsure{src}}, Readers: 2})
	require.NoError(t, err)
	defer s.Close()
	for range 2 {
		b, err := s.Acquire(t.Context(), 1, []int{3})
		require.NoError(t, err)
		_, err = b.Wait(t.Context(), 0)
		require.ErrorIs(t, err, errNoHub)
		require.ErrorContains(t, err, "layer 1 expert 3")
		b.Release()
	}
	st := s.Stats()
	require.Equal(t, int64(2), st.Misses, "the failed read is not kept")
	require.False(t, st.Drives[0].Failed)
	require.Zero(t, st.Drives[0].Reads)
}
