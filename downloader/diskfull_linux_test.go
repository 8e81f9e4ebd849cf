package downloader

import (
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDiskFull fills a small tmpfs: the transfer stops with ErrDiskFull and
// a message saying what to do, keeps what it wrote, and completes once the
// filesystem grows.
func TestDiskFull(t *testing.T) {
	h := newFakeHub(t)
	mnt := t.TempDir()
	require.NoError(t, syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=2m"), "the disk-full test mounts a 2 MiB tmpfs and needs root (CAP_SYS_ADMIN)")
	t.Cleanup(func() { syscall.Unmount(mnt, syscall.MNT_DETACH) })
	dir := filepath.Join(mnt, "mirror")
	m, err := Open(options(h, dir))
	require.NoError(t, err)
	p, err := m.Plan(t.Context())
	require.NoError(t, err)
	err = m.Fetch(t.Context(), p, p.Work(Full))
	require.ErrorIs(t, err, ErrDiskFull)
	require.Contains(t, err.Error(), "free some space and run again")
	kept, err := m.Totals(p.Work(Full))
	require.NoError(t, err)
	require.Positive(t, kept.Present)
	m.Close()

	require.NoError(t, syscall.Mount("tmpfs", mnt, "tmpfs", syscall.MS_REMOUNT, "size=32m"))
	m, err = Open(options(h, dir))
	require.NoError(t, err)
	defer m.Close()
	p, err = m.Plan(t.Context())
	require.NoError(t, err)
	served := h.Served.Load()
	require.NoError(t, m.Fetch(t.Context(), p, p.Work(Full)))
	require.Equal(t, kept.Missing(), h.Served.Load()-served, "nothing written before the disk filled is fetched again")
	h.RequireIdentical(t, dir)
}
