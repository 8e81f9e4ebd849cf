package drives

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/engine"
	"github.com/deltafin/deltafin/experts"
	"github.com/deltafin/deltafin/internal/directio"
)

// tiny is the demo model: k3-tiny, MXFP4 experts in four shards.
var tiny = filepath.Join("..", "testdata", "k3-tiny")

var prompt = []int{1000, 1, 2, 3, 4}

const genTokens = 10

// every streams all experts from disk each token: no cache, every spine
// layer pinned.
func every() *experts.BudgetPlan { return &experts.BudgetPlan{PinnedLayers: 1 << 20, CacheExperts: 0} }

// run generates genTokens greedily from prompt with the drives given and
// returns the tokens, the prompt's last logits, and the model's Stats.
// step, when set, is called after each emitted token.
func run(t *testing.T, ds []experts.Drive, mirrorLast bool, step func(n int)) ([]int, []float32, engine.Stats) {
	t.Helper()
	m, err := engine.Open(t.Context(), tiny, engine.Options{NoSpec: true, Stream: &engine.StreamOptions{Plan: every(), Drives: ds, MirrorLast: mirrorLast}})
	require.NoError(t, err)
	defer m.Close()
	logits, err := m.NewSession().Forward(t.Context(), prompt, false)
	require.NoError(t, err)
	var toks []int
	_, err = m.NewSession().Generate(t.Context(), prompt, engine.GenerateOptions{MaxNew: genTokens}, func(tok int) error {
		toks = append(toks, tok)
		if step != nil {
			step(len(toks))
		}
		return nil
	})
	require.NoError(t, err)
	return toks, logits[len(logits)-1], m.Stats()
}

// filled returns a drive in a new directory holding share of the tiny
// model's experts.
func filled(t *testing.T, m Mirror, share float64) *Drive {
	t.Helper()
	d, err := Open(t.TempDir(), Layout(m.Spans))
	require.NoError(t, err)
	_, err = d.Fill(t.Context(), m, FillOptions{Share: share, Reserve: 1})
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	return d
}

func tinyMirror(t *testing.T) Mirror {
	m, err := OpenMirror(t.Context(), tiny, nil)
	require.NoError(t, err)
	return m
}

func TestTokensAreTheSameWithOneTwoAndThreeDrives(t *testing.T) {
	t.Parallel()
	m := tinyMirror(t)
	want, wantLogits, base := run(t, nil, false, nil)
	require.Len(t, base.Drives, 1)
	require.Equal(t, "mirror", base.Drives[0].Name)
	require.Positive(t, base.Drives[0].Bytes)
	a, b := filled(t, m, 1), filled(t, m, 0.5)
	for _, tc := range []struct {
		name       string
		ds         []experts.Drive
		mirrorLast bool
	}{
		{"mirror and one drive", []experts.Drive{a}, false},
		{"mirror and two drives", []experts.Drive{a, b}, false},
		{"two drives, the mirror last", []experts.Drive{a, b}, true},
	} {
		toks, logits, st := run(t, tc.ds, tc.mirrorLast, nil)
		require.Equal(t, want, toks, tc.name)
		require.Equal(t, wantLogits, logits, tc.name)
		require.Len(t, st.Drives, len(tc.ds)+1)
		for _, d := range st.Drives[1:] {
			require.Positive(t, d.Bytes, "%s: %s was read", tc.name, d.Name)
			require.False(t, d.Failed)
		}
		if tc.mirrorLast {
			require.Zero(t, st.Drives[0].Bytes, "drive a holds every expert")
		}
		require.Zero(t, st.ChecksumFailures)
	}
}

func TestADriveVanishingMidGenerationChangesNothing(t *testing.T) {
	t.Parallel()
	m := tinyMirror(t)
	want, _, _ := run(t, nil, false, nil)
	d := filled(t, m, 1)
	toks, _, st := run(t, []experts.Drive{d}, true, func(n int) {
		if n == 3 {
			// Gone from under the drive: it still offers its copies, but
			// its file now ends before them, so every read from now on
			// fails (as a vanished device's give EIO or ENXIO). Closing
			// the file would not do: that is how a drive is removed,
			// which is no failure (the test below).
			require.NoError(t, os.Truncate(filepath.Join(d.dir, dataName), 0))
		}
	})
	require.Equal(t, want, toks)
	require.True(t, st.Drives[1].Failed, "the drive's reads failed")
	require.Positive(t, st.Drives[1].Bytes, "it served the first tokens")
	require.Positive(t, st.Drives[0].Bytes, "the mirror took over")
}

// Closing a drive mid-generation (what removing it does) withdraws its
// copies: the next reads go to the mirror, the drive has not failed.
func TestADriveClosedMidGenerationChangesNothing(t *testing.T) {
	t.Parallel()
	m := tinyMirror(t)
	want, _, _ := run(t, nil, false, nil)
	d := filled(t, m, 1)
	toks, _, st := run(t, []experts.Drive{d}, true, func(n int) {
		if n == 3 {
			require.NoError(t, d.Close())
			_, ok := d.Replica(Rank(m.Spans, nil)[0])
			require.False(t, ok, "a closed drive offers nothing")
		}
	})
	require.Equal(t, want, toks)
	require.False(t, st.Drives[1].Failed)
	require.Positive(t, st.Drives[1].Bytes)
	require.Positive(t, st.Drives[0].Bytes, "the mirror served the tokens after the close")
}

// removedUnderReads is a drive removed after the store looked up its
// copies: it offers them, and the file they lie in is closed (what
// Close does to a drive's file while its reads are queued).
type removedUnderReads struct {
	*Drive
	closed *directio.File
}

func (r removedUnderReads) Replica(id ckpt.ExpertID) (experts.Replica, bool) {
	rep, ok := r.Drive.Replica(id)
	rep.Source = r.closed
	return rep, ok
}

// TestReadsQueuedForARemovedDriveGoElsewhere: every read the store queued
// for a drive that was closed meanwhile comes back fs.ErrClosed; the
// mirror reads them instead and the drive is not counted as failed (a
// failure would drop it, and report it, as a broken disk).
func TestReadsQueuedForARemovedDriveGoElsewhere(t *testing.T) {
	t.Parallel()
	m := tinyMirror(t)
	want, wantLogits, _ := run(t, nil, false, nil)
	d := filled(t, m, 1)
	f, err := directio.OpenFile(filepath.Join(d.dir, dataName))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	toks, logits, st := run(t, []experts.Drive{removedUnderReads{d, f}}, true, nil)
	require.Equal(t, want, toks)
	require.Equal(t, wantLogits, logits)
	require.False(t, st.Drives[1].Failed)
	require.Positive(t, st.Drives[1].Reads, "the drive was asked")
	require.Zero(t, st.Drives[1].Bytes)
	require.Positive(t, st.Drives[0].Bytes, "the mirror read its experts")
}

// corruptAll flips one byte inside the span of every copy on d.
func corruptAll(t *testing.T, d *Drive, m Mirror) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(d.dir, dataName), os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()
	for _, r := range d.man.Experts {
		sp := m.Spans[r.id()]
		lo, _ := experts.ReplicaRange(sp)
		at := r.Slot + sp.Offset - lo + sp.Size/2
		var b [1]byte
		_, err := f.ReadAt(b[:], at)
		require.NoError(t, err)
		b[0] ^= 0x40
		_, err = f.WriteAt(b[:], at)
		require.NoError(t, err)
	}
	require.NoError(t, f.Sync())
}

func TestABadByteIsDetectedOnReadAndRepaired(t *testing.T) {
	t.Parallel()
	m := tinyMirror(t)
	want, wantLogits, _ := run(t, nil, false, nil)
	d := filled(t, m, 1)
	n := d.Info().Experts
	corruptAll(t, d, m)
	toks, logits, st := run(t, []experts.Drive{d}, true, nil)
	require.Equal(t, want, toks)
	require.Equal(t, wantLogits, logits)
	require.Positive(t, st.ChecksumFailures)
	// (A prefetch still in flight may count one more between the two
	// readings; the drive's count is taken after the store's.)
	require.GreaterOrEqual(t, st.Drives[1].Corrupt, st.ChecksumFailures)
	require.False(t, st.Drives[1].Failed, "a bad copy drops the copy, not the drive")
	bad := d.Info().Bad
	require.Positive(t, bad)

	// The manifest remembers the bad copies across a reopen.
	again, err := Open(d.path, Layout(m.Spans))
	require.NoError(t, err)
	require.Equal(t, bad, again.Info().Bad)
	require.NoError(t, again.Close())

	fixed, err := d.Repair(t.Context(), m)
	require.NoError(t, err)
	require.Equal(t, bad, fixed)
	// Scrub finds the copies never read still bad, repairs them, and
	// then every copy checks.
	_, _, err = d.Scrub(t.Context(), m)
	require.NoError(t, err)
	checked, repaired, err := d.Scrub(t.Context(), m)
	require.NoError(t, err)
	require.Equal(t, n, checked)
	require.Zero(t, repaired)
	require.Equal(t, Info{Path: d.path, Experts: n, Bytes: d.Info().Bytes}, d.Info())
	toks, _, st = run(t, []experts.Drive{d}, true, nil)
	require.Equal(t, want, toks)
	require.Zero(t, st.ChecksumFailures)
}

func TestFillResumesHottestFirst(t *testing.T) {
	t.Parallel()
	m := tinyMirror(t)
	heat := map[ckpt.ExpertID]float32{}
	hot := Rank(m.Spans, nil)[len(m.Spans)-1] // last by id: first only by heat
	heat[hot] = 5
	dir := t.TempDir()
	d, err := Open(dir, Layout(m.Spans))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	_, err = d.Fill(ctx, m, FillOptions{Share: 1, Reserve: 1, Heat: heat, Progress: func(done, total int, _ int64) { cancel() }})
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, batch, d.Info().Experts, "one batch recorded before the cancel")
	_, ok := d.Replica(hot)
	require.True(t, ok, "the hottest expert is copied first")
	require.NoError(t, d.Close())

	d, err = Open(dir, Layout(m.Spans))
	require.NoError(t, err)
	defer d.Close()
	res, err := d.Fill(t.Context(), m, FillOptions{Share: 1, Reserve: 1})
	require.NoError(t, err)
	require.Equal(t, len(m.Spans)-batch, res.Copied, "resumed where the manifest ended")
	require.Equal(t, len(m.Spans), res.Held)
	checked, repaired, err := d.Scrub(t.Context(), m)
	require.NoError(t, err)
	require.Equal(t, len(m.Spans), checked)
	require.Zero(t, repaired)

	half, err := Open(t.TempDir(), Layout(m.Spans))
	require.NoError(t, err)
	defer half.Close()
	res, err = half.Fill(t.Context(), m, FillOptions{Share: 0.25, Reserve: 1})
	require.NoError(t, err)
	require.Equal(t, (len(m.Spans)+3)/4, res.Held)

	// Another layout's copies are not offered.
	other, err := Open(dir, "another")
	require.NoError(t, err)
	defer other.Close()
	require.Zero(t, other.Info().Experts)
}

func TestCheckDeviceRefusesTheMirrorsDevice(t *testing.T) {
	t.Parallel()
	err := CheckDevice(filepath.Join(t.TempDir(), "not", "yet"), tiny)
	if errors.Is(err, ErrSameDevice) {
		require.ErrorContains(t, err, "--force")
		return
	}
	// The temporary directory is on another device here: compare a
	// directory with itself instead.
	require.NoError(t, err)
	require.ErrorIs(t, CheckDevice(tiny, filepath.Join(tiny, "sub")), ErrSameDevice)
}

func TestProbeChoosesReaders(t *testing.T) {
	t.Parallel()
	d, err := Open(t.TempDir(), "layout")
	require.NoError(t, err)
	defer d.Close()
	res, err := d.Probe(t.Context(), 8<<20)
	require.NoError(t, err)
	require.Contains(t, probeDepths, res.Readers)
	require.Positive(t, res.GBps)
	require.Equal(t, res.Readers, d.Readers())
	again, err := Open(d.path, "layout")
	require.NoError(t, err)
	require.Equal(t, res.Readers, again.Readers(), "kept in the manifest")
}
