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
	// Not parallel: it counts the bytes the hub serves, which the late
	// handlers of cancelled requests skew on a loaded machine.
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
	// What the maps on disk hold (a map write the full disk refused may
	// lag the bytes: those are fetched again, never trusted).
	onDisk, err := m.Totals(p.Work(Full))
	require.NoError(t, err)
	require.Positive(t, onDisk.Present)
	h.WaitIdle() // the earlier runs' last answers are counted before the baseline
	served := h.Served.Load()
	require.NoError(t, m.Fetch(t.Context(), p, p.Work(Full)))
	h.WaitIdle() // the last answer is counted once its handler returns
	require.Equal(t, onDisk.Missing(), h.Served.Load()-served, "nothing recorded before the disk filled is fetched again")
	h.RequireIdentical(t, dir)
}

// TestDiskFullPausesUntilResume is the app's behaviour: the transfer pauses
// on a full disk, says why, and continues after Resume.
func TestDiskFullPausesUntilResume(t *testing.T) {
	t.Parallel()
	h := newFakeHub(t)
	mnt := t.TempDir()
	require.NoError(t, syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=2m"), "the disk-full test mounts a 2 MiB tmpfs and needs root (CAP_SYS_ADMIN)")
	t.Cleanup(func() { syscall.Unmount(mnt, syscall.MNT_DETACH) })
	dir := filepath.Join(mnt, "mirror")
	opts := options(h, dir)
	opts.WaitOnDiskFull = true
	paused := make(chan error, 1)
	opts.Progress = func(ev Event) {
		if ev.Phase == PhasePaused && ev.Err != nil {
			select {
			case paused <- ev.Err:
			default:
			}
		}
	}
	m, err := Open(opts)
	require.NoError(t, err)
	defer m.Close()
	p, err := m.Plan(t.Context())
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- m.Fetch(t.Context(), p, p.Work(Full)) }()
	select {
	case err := <-paused:
		require.ErrorIs(t, err, ErrDiskFull)
	case err := <-done:
		t.Fatalf("Fetch ended instead of pausing: %v", err)
	}
	require.True(t, m.Paused())
	require.NoError(t, syscall.Mount("tmpfs", mnt, "tmpfs", syscall.MS_REMOUNT, "size=32m"))
	m.Resume()
	require.NoError(t, <-done)
	h.RequireIdentical(t, dir)
}

// TestDiskFullKeepsWhatItWrote fills a 2 MiB tmpfs with chunks larger than
// any shard: what the transfer wrote before ENOSPC (the filesystem's used
// pages) is kept in the presence maps but for less than a unit of durable
// progress per stream, instead of every byte of the chunks in flight.
func TestDiskFullKeepsWhatItWrote(t *testing.T) {
	t.Parallel()
	h := newFakeHub(t)
	mnt := t.TempDir()
	require.NoError(t, syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=2m"), "the disk-full test mounts a 2 MiB tmpfs and needs root (CAP_SYS_ADMIN)")
	t.Cleanup(func() { syscall.Unmount(mnt, syscall.MNT_DETACH) })
	dir := filepath.Join(mnt, "mirror")
	opts := options(h, dir)
	const commit = 32 << 10
	opts.Jobs, opts.ChunkSize, opts.CommitEvery = 2, 4<<20, commit
	m, err := Open(opts)
	require.NoError(t, err)
	p, err := m.Plan(t.Context())
	require.NoError(t, err)
	require.ErrorIs(t, m.Fetch(t.Context(), p, p.Work(Full)), ErrDiskFull)
	m.Close()
	var st syscall.Statfs_t
	require.NoError(t, syscall.Statfs(mnt, &st))
	used := int64(st.Blocks-st.Bfree) * st.Bsize

	m, err = Open(opts)
	require.NoError(t, err)
	defer m.Close()
	p, err = m.Plan(t.Context())
	require.NoError(t, err)
	kept, err := m.Totals(p.Work(Full))
	require.NoError(t, err)
	lost := used - kept.Present
	t.Logf("ENOSPC on a 2 MiB tmpfs: %d bytes used, %d kept in the maps (%d not kept, incl. the maps themselves; CommitEvery %d KiB, 2 streams)", used, kept.Present, lost, commit>>10)
	// Per stream a unit written and not yet durable and its read buffer,
	// plus the pages of the manifest and the maps.
	require.LessOrEqual(t, lost, int64(opts.Jobs*2*commit+64<<10), "what was written before the disk filled is kept")
}
