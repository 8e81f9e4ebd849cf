package app

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/drives"
)

// TestExpertDrivesFromTheMenu installs the model (stream mode), then adds
// an expert drive through the menu's folder dialog (a folder in /dev/shm,
// another device than the data directory) and removes it the same way.
func TestExpertDrivesFromTheMenu(t *testing.T) {
	desk.reset()
	hub := newGatedHub(t)
	cfg := hubAppConfig(t, hub.Hub)
	drive, err := os.MkdirTemp("/dev/shm", "deltafin-drive-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(drive) })
	answer := filepath.Join(t.TempDir(), "answer")
	require.NoError(t, os.WriteFile(answer, []byte("0"), 0o644))
	deps := testDeps(cfg, t.TempDir())
	deps.Desktop = cmdDesktop{
		confirm: [][]string{{"sh", "-c", `exit $(cat "$0")`, answer}},
		choose:  [][]string{{"sh", "-c", `printf '%s\n' "$0"`, drive}},
	}
	a := startApp(t, cfg, deps)
	require.False(t, a.Menu().Item(ItemDrives).Enabled, "nothing installed to copy")
	a.Click(ItemDownloadStream)
	desk.waitNotification(t, "Download finished")
	waitFor(t, a, "installed", func(s State) bool { return s.Install.Mode == InstallStream })
	require.True(t, a.Menu().Item(ItemDrives).Enabled)

	a.Click(ItemDrives)
	n := desk.waitNotification(t, "Expert drive added")
	require.Contains(t, n.Body, drive+" holds ")
	entries, err := ExpertDrives(cfg)
	require.NoError(t, err)
	require.Equal(t, []DriveEntry{{Path: drive, Share: 1}}, entries)
	in, err := drives.Stat(drive)
	require.NoError(t, err)
	require.Positive(t, in.Experts, "the stream install's experts were fetched and copied")

	a.Click(ItemDrives)
	desk.waitNotification(t, "Expert drive removed")
	entries, err = ExpertDrives(cfg)
	require.NoError(t, err)
	require.Empty(t, entries)
	_, err = os.Stat(filepath.Join(drive, drives.Sub))
	require.ErrorIs(t, err, os.ErrNotExist)
}
