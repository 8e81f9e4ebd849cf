package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/downloader"
	"github.com/deltafin/deltafin/downloader/hubtest"
)

// listTree returns every path under dir.
func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		out = append(out, p)
		return err
	}))
	return out
}

// TestDryRunsWriteNothing: setup --dry-run and fetch-experts --dry-run on
// an empty data directory create nothing in it, and on a stream install
// whose filesystem is mounted read-only they work and report what is
// present.
func TestDryRunsWriteNothing(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	h := hubtest.New(t, filepath.Join("..", "testdata", "k3-tiny"))
	cfg := hubConfig(t, h)
	var out bytes.Buffer
	require.NoError(t, setup(ctx, cfg, SetupOptions{Mode: downloader.Auto, DryRun: true, Headroom: 1}, &out))
	require.Contains(t, out.String(), "--auto would install: full")
	require.NoError(t, fetchExperts(ctx, cfg, FetchOptions{DryRun: true, Headroom: 1}, &out))
	require.Equal(t, []string{cfg.DataDir}, listTree(t, cfg.DataDir), "a dry run creates nothing in the data directory")

	// A read-only install: a tmpfs holding a stream install, remounted ro.
	cfg.DataDir = t.TempDir()
	if err := syscall.Mount("tmpfs", cfg.DataDir, "tmpfs", 0, "size=64m"); err != nil {
		t.Skipf("the read-only half mounts a tmpfs and needs root (CAP_SYS_ADMIN): %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(cfg.DataDir, syscall.MNT_DETACH) })
	require.NoError(t, setup(ctx, cfg, SetupOptions{Mode: downloader.Stream, Headroom: 1}, &out))
	require.NoError(t, syscall.Mount("tmpfs", cfg.DataDir, "tmpfs", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""))
	before := listTree(t, cfg.DataDir)
	out.Reset()
	require.NoError(t, setup(ctx, cfg, SetupOptions{Mode: downloader.Auto, DryRun: true, Headroom: 1}, &out))
	require.Regexp(t, `stream\s+\S+ \S+\s+\S+ \S+\s+0 B\n`, out.String(), "the stream install is all present")
	require.NoError(t, fetchExperts(ctx, cfg, FetchOptions{DryRun: true, Headroom: 1}, &out))
	require.Contains(t, out.String(), "fetch-experts: every missing byte of the model")
	require.Equal(t, before, listTree(t, cfg.DataDir))
}

// TestKeepFree: --keep-free sets the margin setup keeps (the dry run says
// it) and refuses a mode that would pass it.
func TestKeepFree(t *testing.T) {
	t.Parallel()
	h := hubtest.New(t, filepath.Join("..", "testdata", "k3-tiny"))
	cfg := hubConfig(t, h)
	run := func(cmd func(ctx context.Context, c *Call) error, args ...string) (string, error) {
		var out, errOut bytes.Buffer
		c := &Call{Config: cfg, Args: args, Stdout: &out, Stderr: &errOut}
		err := cmd(t.Context(), c)
		return out.String() + errOut.String(), err
	}
	got, err := run(Setup, "--dry-run", "--keep-free", "2.5")
	require.NoError(t, err)
	require.Contains(t, got, "(2.5 GB kept free)")
	got, err = run(Setup, "--dry-run")
	require.NoError(t, err)
	require.Contains(t, got, "(1.0 GB kept free)", "the default scales with the model: the tiny one keeps the 1 GB floor, not K3's 100 GB")
	free, err := freeDisk(cfg.DataDir)
	require.NoError(t, err)
	huge := float64(free)/1e9 + 1
	got, err = run(Setup, "--full", "--keep-free", formatGB(huge))
	require.ErrorIs(t, err, downloader.ErrNoSpace, got)
	got, err = run(FetchExperts, "--keep-free", formatGB(huge))
	require.ErrorIs(t, err, downloader.ErrNoSpace, got)
	_, err = run(Setup, "--keep-free", "-1")
	require.ErrorIs(t, err, errUsage)
}

func formatGB(gb float64) string { return strconv.FormatFloat(gb, 'f', 1, 64) }

// TestDryRunRefusalSaysWhyWithoutPrefix: setup --dry-run with more disk
// to keep free than there is says why the download would be refused, in
// the downloader's words but without its package prefix.
func TestDryRunRefusalSaysWhyWithoutPrefix(t *testing.T) {
	t.Parallel()
	h := hubtest.New(t, filepath.Join("..", "testdata", "k3-tiny"))
	cfg := hubConfig(t, h)
	var out bytes.Buffer
	require.NoError(t, setup(t.Context(), cfg, SetupOptions{Mode: downloader.Full, DryRun: true, Headroom: 1 << 62}, &out))
	require.Regexp(t, `(?m)^--full would refuse: not enough free disk`, out.String())
	require.NotContains(t, out.String(), "downloader:")
}
