package app

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/downloader"
	"github.com/deltafin/deltafin/downloader/hubtest"
)

// TestMirrorInstall drives the menu's downloader and warmer over the real
// Mirror against the fake hub: nothing, a refusal that names the
// shortfall, a stream install with progress, then warming to a full one.
func TestMirrorInstall(t *testing.T) {
	h := hubtest.New(t, filepath.Join("..", "testdata", "k3-tiny"))
	cfg := hubConfig(t, h)
	d := newMirrorInstall(cfg)
	d.chunkSize = 64 << 10
	t.Cleanup(func() { require.NoError(t, d.Close()) })

	in, err := d.Installed(t.Context())
	require.NoError(t, err)
	require.Equal(t, InstallState{}, in)

	d.headroom = 1 << 62
	err = d.Download(t.Context(), ModeStream, func(Progress) {})
	require.ErrorIs(t, err, downloader.ErrNoSpace)
	require.Contains(t, err.Error(), "more for stream mode")

	d.headroom = 1
	var last Progress
	require.NoError(t, d.Download(t.Context(), ModeStream, func(p Progress) { last = p }))
	require.Positive(t, last.Total)
	require.Equal(t, last.Total, last.Done)
	in, err = d.Installed(t.Context())
	require.NoError(t, err)
	require.Equal(t, InstallStream, in.Mode)
	require.Positive(t, in.ExpertsTotal)
	require.Less(t, in.ExpertsCached, in.ExpertsTotal)
	missing := in.ExpertsTotal - in.ExpertsCached

	r, err := d.Warm(t.Context(), func(p Progress) { last = p })
	require.NoError(t, err)
	require.Equal(t, missing, r.Experts)
	require.Positive(t, r.Bytes)
	in, err = d.Installed(t.Context())
	require.NoError(t, err)
	require.Equal(t, InstallFull, in.Mode)
	require.Equal(t, in.ExpertsTotal, in.ExpertsCached)

	// After a relaunch (the lock released) the install reads the same.
	require.NoError(t, d.Close())
	again := newMirrorInstall(cfg)
	t.Cleanup(func() { require.NoError(t, again.Close()) })
	in, err = again.Installed(t.Context())
	require.NoError(t, err)
	require.Equal(t, InstallFull, in.Mode)
}

// TestMirrorInstallSaysUnverified: a stream install from a hub without Xet
// hashes is "unverified" in the menu's status line and on the page.
func TestMirrorInstallSaysUnverified(t *testing.T) {
	h := hubtest.New(t, filepath.Join("..", "testdata", "k3-tiny"))
	h.NoXet = true
	cfg := hubConfig(t, h)
	d := newMirrorInstall(cfg)
	d.chunkSize, d.headroom = 64<<10, 1
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	require.NoError(t, d.Download(t.Context(), ModeStream, func(Progress) {}))
	in, err := d.Installed(t.Context())
	require.NoError(t, err)
	require.True(t, in.Unverified)
	require.Contains(t, statusLine(State{Install: in}), "· unverified")
}
