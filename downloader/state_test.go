package downloader

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNoXetOnDemandIsRefused: a stream install from a hub without Xet. Its
// state is "unverified", and an expert the engine asks for is fetched but
// refused (ErrUnverified naming the file, the range and the ways out)
// unless unverified bytes are allowed.
func TestNoXetOnDemandIsRefused(t *testing.T) {
	t.Parallel()
	h := newFakeHub(t)
	h.NoXet = true
	dir := t.TempDir()
	m, p := setup(t, t.Context(), options(h, dir), Stream)
	u, err := m.Unverified()
	require.NoError(t, err)
	require.Equal(t, "unverified", u.State())
	e := p.Experts()[0]
	src, err := m.Source(e.File)
	require.NoError(t, err)
	err = src.Ensure(t.Context(), e.Start, e.Len())
	require.ErrorIs(t, err, ErrUnverified)
	require.ErrorContains(t, err, e.File)
	require.ErrorContains(t, err, e.Range.String())
	require.ErrorContains(t, err, "fetch-experts")
	require.ErrorContains(t, err, "--allow-unverified")
	got, err := m.Present(e.File, e.Start, e.Len())
	require.NoError(t, err)
	require.Equal(t, e.Len(), got, "fetched, for a later check")
	require.NoError(t, m.Close())

	opts := options(h, dir)
	opts.AllowUnverified = true
	m, err = Open(opts)
	require.NoError(t, err)
	defer m.Close()
	src, err = m.Source(e.File)
	require.NoError(t, err)
	require.NoError(t, src.Ensure(t.Context(), e.Start, e.Len()))
}

// TestFolderChecksPresence: a copy of a stream install's folder, without
// a mirror to fetch through, refuses a missing range by file and range,
// and passes a present one.
func TestFolderChecksPresence(t *testing.T) {
	t.Parallel()
	h := newFakeHub(t)
	dir := t.TempDir()
	_, p := setup(t, t.Context(), options(h, dir), Stream)
	require.True(t, IsMirrorFolder(dir))
	require.False(t, IsMirrorFolder(filepath.Join("..", "testdata", "k3-tiny")))
	require.NoError(t, os.Remove(filepath.Join(dir, metaDir, "manifest.json")))
	f, err := OpenFolder(dir)
	require.NoError(t, err)
	require.Empty(t, f.Repo, "no manifest: no repository to fetch from")
	e := p.Experts()[0]
	err = f.Check(e.File, e.Start, e.Len())
	require.ErrorIs(t, err, ErrMissing)
	require.ErrorContains(t, err, e.File)
	require.ErrorContains(t, err, e.Range.String())
	s := p.SpineWork()[0]
	require.NoError(t, f.Check(s.File, s.Start, s.Len()))
	u, err := f.Unverified()
	require.NoError(t, err)
	require.Equal(t, "verified", u.State(), "the spine was verified by its Xet hash")
}
