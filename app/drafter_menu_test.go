package app

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/downloader/hubtest"
)

// TestMenuDownloadsTheDrafter: the menu's entry installs the drafter from
// the loopback hub as setup --drafter does, shows its progress, and reads
// "Drafter installed" (disabled) afterwards and after a relaunch.
func TestMenuDownloadsTheDrafter(t *testing.T) {
	h := hubtest.New(t, filepath.Join("..", "testdata", "k3-tiny-eagle3"))
	cfg := hubConfig(t, h)
	cfg.DrafterRepo, cfg.DrafterRevision = hubtest.Repo, hubtest.Revision
	cfg.KeepFreeGB = 1e-9

	a := New(cfg, Deps{Drafter: &drafterInstall{cfg: cfg, chunkSize: 64 << 10}}, nil)
	require.NoError(t, a.Start(t.Context()))
	it := a.Menu().Item(ItemDrafter)
	require.Equal(t, LabelDrafter, it.Label)
	require.True(t, it.Visible && it.Enabled)

	var sawProgress bool
	a.Click(ItemDrafter)
	require.Eventually(t, func() bool {
		st := a.State()
		sawProgress = sawProgress || st.Drafter.Total > 0
		return st.DrafterInstalled
	}, 20*time.Second, 5*time.Millisecond)
	require.NoError(t, a.Close(t.Context()))
	require.True(t, sawProgress || a.State().Drafter.Total > 0, "progress reached the state")
	it = a.Menu().Item(ItemDrafter)
	require.Equal(t, LabelDrafterReady, it.Label)
	require.False(t, it.Enabled)
	require.Empty(t, a.State().Problem)
	dir, err := InstalledDrafter(cfg)
	require.NoError(t, err)
	h.RequireIdentical(t, dir)

	again := New(cfg, Deps{Drafter: &drafterInstall{cfg: cfg}}, nil)
	require.NoError(t, again.Start(t.Context()))
	require.Equal(t, LabelDrafterReady, again.Menu().Item(ItemDrafter).Label)
	require.NoError(t, again.Close(t.Context()))

	// A build without the installer hides the entry.
	require.False(t, BuildMenu(State{}).Item(ItemDrafter).Visible)
}
