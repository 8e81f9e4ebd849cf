package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/app"
	"github.com/deltafin/deltafin/drives"
)

// TestDrivesAddOnAFullDiskLeavesNoDrive: drives add on a 1 MiB tmpfs
// fails (its probe cannot be written); the drive is not listed afterwards
// and nothing of it is left on the disk.
func TestDrivesAddOnAFullDiskLeavesNoDrive(t *testing.T) {
	t.Parallel()
	mnt := t.TempDir()
	require.NoError(t, syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m"), "the disk-full test mounts a 1 MiB tmpfs and needs root (CAP_SYS_ADMIN)")
	t.Cleanup(func() { syscall.Unmount(mnt, syscall.MNT_DETACH) })
	cfg := app.DefaultConfig(func(string) string { return "" })
	cfg.DataDir = t.TempDir()
	model := filepath.Join("..", "testdata", "k3-tiny")
	var out, errOut bytes.Buffer
	err := Drives(t.Context(), &Call{Command: Command{Name: "drives"}, Config: cfg, Args: []string{"add", mnt, "--all", "--model", model, "--force", "--probe-mib", "8"}, Stdout: &out, Stderr: &errOut})
	require.Error(t, err, out.String())
	entries, err := app.ExpertDrives(cfg)
	require.NoError(t, err)
	require.Empty(t, entries, "a failed add leaves no listed drive")
	_, err = os.Stat(filepath.Join(mnt, drives.Sub))
	require.ErrorIs(t, err, os.ErrNotExist, "nor its partial copies")
}
