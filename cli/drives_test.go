package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/app"
	"github.com/deltafin/deltafin/drives"
)

// TestDrivesAddListRunRemove adds a drive holding half the demo model's
// experts, lists it, runs the reference prompt reading from it, and
// removes it with its copies.
func TestDrivesAddListRunRemove(t *testing.T) {
	t.Parallel()
	cfg := app.DefaultConfig(func(string) string { return "" })
	cfg.DataDir = t.TempDir()
	model := filepath.Join("..", "testdata", "k3-tiny")
	drive := filepath.Join(t.TempDir(), "ssd2")
	call := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := Drives(t.Context(), &Call{Command: Command{Name: "drives"}, Config: cfg, Args: args, Stdout: &out, Stderr: &errOut})
		return out.String() + errOut.String(), err
	}
	out, err := call("add", drive, "--model", model)
	require.ErrorIs(t, err, errUsage, out)
	require.Contains(t, out, "--share N% or --all")
	out, err = call("add", drive, "--share", "150%", "--model", model)
	require.ErrorIs(t, err, errUsage, out)
	if err := drives.CheckDevice(drive, model); err != nil {
		out, err = call("add", drive, "--share", "50%", "--model", model)
		require.ErrorIs(t, err, drives.ErrSameDevice, out)
	}
	out, err = call("add", drive, "--share", "50%", "--model", model, "--force", "--probe-mib", "8")
	require.NoError(t, err, out)
	require.Contains(t, out, "holds 144 of 144 experts wanted")
	entries, err := app.ExpertDrives(cfg)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.Equal(t, 0.5, entries[0].Share)

	out, err = call("list")
	require.NoError(t, err)
	require.Contains(t, out, drive)
	require.Contains(t, out, "50%  ")

	cfg.Run = app.RunConfig{Temperature: greedy(), Model: model, IDs: ints(reference(t, "text.input_ids")), MaxNew: 8, JSON: true}
	var stdout, stderr bytes.Buffer
	require.NoError(t, runPrompt(t.Context(), cfg, &stdout, &stderr))
	var res RunOutput
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &res))
	require.Equal(t, ints(reference(t, "text.greedy_tokens"))[:8], res.IDs)

	out, err = call("scrub", "--model", model)
	require.NoError(t, err, out)
	require.Contains(t, out, "144 copies checked, 0 repaired")
	out, err = call("remove", drive)
	require.NoError(t, err, out)
	_, err = os.Stat(filepath.Join(drive, drives.Sub))
	require.ErrorIs(t, err, os.ErrNotExist)
	out, err = call("list")
	require.NoError(t, err)
	require.Contains(t, out, "no expert drives")
	_, err = call("remove", drive)
	require.ErrorIs(t, err, app.ErrDrive)
}

// While the app (or a server) holds the data directory, drives add,
// remove and scrub are refused with who holds it; list still answers.
func TestDrivesRefusedWhileTheAppRuns(t *testing.T) {
	t.Parallel()
	cfg := app.DefaultConfig(func(string) string { return "" })
	cfg.DataDir = t.TempDir()
	lock, err := app.LockDataDir(cfg.DataDir)
	require.NoError(t, err)
	defer lock.Close()
	call := func(args ...string) error {
		var out bytes.Buffer
		return Drives(t.Context(), &Call{Command: Command{Name: "drives"}, Config: cfg, Args: args, Stdout: &out, Stderr: &out})
	}
	drive := t.TempDir()
	for _, args := range [][]string{{"add", drive, "--all"}, {"remove", drive}, {"scrub"}} {
		err := call(args...)
		require.ErrorIs(t, err, app.ErrRunning, args)
		require.ErrorContains(t, err, "Expert drives…", args)
	}
	require.NoError(t, call("list"))
}

// TestDrivesScrubRepairsADamagedManifest: a drive whose manifest is
// truncated (a disk fault) cannot be opened; drives scrub sets it aside,
// copies the drive's share again (checksummed), and the drive lists and
// scrubs clean afterwards.
func TestDrivesScrubRepairsADamagedManifest(t *testing.T) {
	t.Parallel()
	cfg := app.DefaultConfig(func(string) string { return "" })
	cfg.DataDir = t.TempDir()
	model := filepath.Join("..", "testdata", "k3-tiny")
	drive := filepath.Join(t.TempDir(), "ssd2")
	call := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := Drives(t.Context(), &Call{Command: Command{Name: "drives"}, Config: cfg, Args: args, Stdout: &out, Stderr: &errOut})
		return out.String() + errOut.String(), err
	}
	out, err := call("add", drive, "--share", "25%", "--model", model, "--force", "--probe-mib", "8")
	require.NoError(t, err, out)
	man := filepath.Join(drive, drives.Sub, "manifest.json")
	b, err := os.ReadFile(man)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(man, b[:len(b)/2], 0o644))
	_, err = drives.Open(drive, "")
	require.ErrorIs(t, err, drives.ErrManifest)

	out, err = call("scrub", "--model", model)
	require.NoError(t, err, out)
	require.Contains(t, out, "the manifest is damaged")
	require.Contains(t, out, "manifest repaired, 72 copies made again")
	aside, err := filepath.Glob(man + ".damaged-*")
	require.NoError(t, err)
	require.Len(t, aside, 1, "the damaged manifest is kept aside")
	out, err = call("scrub", "--model", model)
	require.NoError(t, err, out)
	require.Contains(t, out, "72 copies checked, 0 repaired")
}
