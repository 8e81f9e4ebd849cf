package bench

import (
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/downloader"
	"github.com/deltafin/deltafin/experts"
	"github.com/deltafin/deltafin/internal/testref"
)

// TestEnginePrefillReportsTheReadsAlone runs the prefill measurement over
// a copy of k3-tiny (its trace is written beside the shards): the prompt's
// distinct experts are replayed once without compute, and the report's
// figures hold together.
func TestEnginePrefillReportsTheReadsAlone(t *testing.T) {
	t.Parallel()
	dir := testref.CopyModel(t, "k3-tiny", t.TempDir())
	o := SliceBenchOptions{Dir: dir, Prefill: 24, Seed: 3}
	r, err := o.enginePrefill(t.Context(), experts.BudgetPlan{PinnedLayers: 10})
	require.NoError(t, err)
	require.Positive(t, r.DistinctExperts)
	require.Positive(t, r.ReadsAlone)
	require.InDelta(t, r.TimeToFirstToken/r.ReadsAlone, r.TTFTRatio, 1e-9)
	require.InDelta(t, r.TimeToFirstToken-r.ExpertWait, r.Compute, 1e-9)
	require.GreaterOrEqual(t, r.ExpertWait, 0.0)
	require.Positive(t, r.Open.PinnedBytes, "the pinned spine was read")
	require.Positive(t, r.PinnedGBps)

	_, err = replayPrefillReads(t.Context(), dir, map[choice]bool{{layer: 1, expert: 999}: true})
	require.Error(t, err, "an expert the checkpoint lacks")
}

// TestWarmPrefillReadsNothingTheCacheHolds runs the prefill measurement
// twice over k3-tiny: with a cache holding every expert the second pass
// reads nothing, and with no cache it reads what the first pass read.
func TestWarmPrefillReadsNothingTheCacheHolds(t *testing.T) {
	t.Parallel()
	dir := testref.CopyModel(t, "k3-tiny", t.TempDir())
	o := SliceBenchOptions{Dir: dir, Prefill: 24, Seed: 3, PrefillWarm: true}
	r, err := o.enginePrefill(t.Context(), experts.BudgetPlan{PinnedLayers: 10, CacheExperts: 1 << 10})
	require.NoError(t, err)
	require.NotNil(t, r.Warm)
	require.Positive(t, r.DiskBytes, "the first pass read its experts")
	require.Zero(t, r.Warm.DiskBytes, "the second found them all in the cache")
	require.Positive(t, r.Warm.TimeToFirstToken)
	warm := r

	r, err = o.enginePrefill(t.Context(), experts.BudgetPlan{PinnedLayers: 10})
	require.NoError(t, err)
	require.Equal(t, r.DiskBytes, r.Warm.DiskBytes, "no cache: the second pass reads them again")

	o.PrefillWarm = false
	r, err = o.enginePrefill(t.Context(), experts.BudgetPlan{PinnedLayers: 10})
	require.NoError(t, err)
	require.Nil(t, r.Warm)
	require.Equal(t, r.TokenMajorExperts, warm.TokenMajorExperts, "the warm pass's choices are not counted again")
	require.Equal(t, r.DistinctExperts, warm.DistinctExperts)
}

// TestIOOnlyRateReadsTheSpineAndTheExperts replays k3-tiny's decode reads
// through the expert store: with every layer streamed the spine's bytes
// join the experts', and a layer past the checkpoint's has nothing to read.
func TestIOOnlyRateReadsTheSpineAndTheExperts(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "testdata", "k3-tiny")
	ix, err := ckpt.OpenIndex(t.Context(), dir, nil)
	require.NoError(t, err)
	streamed, pinned := spineExtents(ix, 0), spineExtents(ix, 1<<20)
	require.NoError(t, ix.Close())
	var bytes int64
	for i, ext := range streamed {
		require.NotEmpty(t, ext, "layer %d has a spine", i)
		require.Empty(t, pinned[i], "layer %d is pinned", i)
		for _, e := range ext {
			bytes += e.hi - e.lo
		}
	}
	require.Positive(t, bytes)
	rate, err := ioOnlyRate(t.Context(), dir, 0, 2, rand.New(rand.NewPCG(1, 2)))
	require.NoError(t, err)
	require.Positive(t, rate)
	_, err = ioOnlyRate(t.Context(), t.TempDir(), 0, 1, rand.New(rand.NewPCG(1, 2)))
	require.Error(t, err, "no checkpoint")
}

// TestMirrorPrefillReadsWhatThePlainFilesRead installs a copy of k3-tiny as
// a full mirror and runs the prefill measurement through the mirror's
// Sources: the router chooses the same experts, and the store reads them
// as over the plain files, each once.
func TestMirrorPrefillReadsWhatThePlainFilesRead(t *testing.T) {
	t.Parallel()
	dir := testref.CopyModel(t, "k3-tiny", filepath.Join(t.TempDir(), "slice"))
	o := SliceBenchOptions{Dir: dir, Prefill: 24, Seed: 3}
	plain, err := o.enginePrefill(t.Context(), experts.BudgetPlan{PinnedLayers: 10})
	require.NoError(t, err)

	m, err := installMirror(dir)
	require.NoError(t, err)
	defer m.Close()
	require.True(t, downloader.IsMirrorFolder(m.Dir()))
	s, err := m.OpenSource()(t.Context(), filepath.Join(m.Dir(), "model-00002-of-000004.safetensors"))
	require.NoError(t, err)
	_, ensurer := s.(ckpt.Ensurer)
	require.True(t, ensurer, "the mirror's Sources are Ensurers")
	mo := o
	mo.Dir, mo.open = m.Dir(), m.OpenSource()
	mirror, err := mo.enginePrefill(t.Context(), experts.BudgetPlan{PinnedLayers: 10})
	require.NoError(t, err)
	require.Equal(t, plain.DistinctExperts, mirror.DistinctExperts)
	require.Equal(t, plain.DiskBytes, mirror.DiskBytes, "the same bytes read")
	require.InDelta(t, plain.ReadAmplification, mirror.ReadAmplification, 1e-12)
}
