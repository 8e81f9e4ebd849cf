package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/app"
	"github.com/deltafin/deltafin/downloader"
	"github.com/deltafin/deltafin/downloader/hubtest"
)

// runIDs runs cfg's prompt with --json, greedy (the tokens compared are
// the checkpoint's, not a draw's), and returns the generated ids.
func runIDs(t *testing.T, cfg app.Config) ([]int, error) {
	t.Helper()
	cfg.Run.Temperature = greedy()
	var stdout, stderr bytes.Buffer
	if err := runPrompt(t.Context(), cfg, &stdout, &stderr); err != nil {
		return nil, err
	}
	var out RunOutput
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &out))
	return out.IDs, nil
}

// plainIDs are the tokens of the complete checkpoint, read as plain files.
func plainIDs(t *testing.T, cfg app.Config, ids []int, n int) []int {
	t.Helper()
	cfg.Run = app.RunConfig{Model: filepath.Join("..", "testdata", "k3-tiny"), IDs: ids, MaxNew: n, JSON: true}
	got, err := runIDs(t, cfg)
	require.NoError(t, err)
	return got
}

// TestRunFromAStreamInstallsFolder: `deltafin run --model` pointed at a
// stream install's mirror folder. The folder's missing experts are holes;
// run fetches them through the mirror the folder belongs to and gives the
// complete checkpoint's tokens. A copy of the folder without its
// manifest has no mirror to fetch through: run refuses, naming the file
// and the byte range, instead of reading zeros.
func TestRunFromAStreamInstallsFolder(t *testing.T) {
	t.Parallel()
	h := hubtest.New(t, filepath.Join("..", "testdata", "k3-tiny"))
	cfg := hubConfig(t, h)
	require.NoError(t, setup(t.Context(), cfg, SetupOptions{Mode: downloader.Stream, Headroom: 1, ChunkSize: 64 << 10}, io.Discard))
	prompt := ints(reference(t, "short.input_ids"))
	want := plainIDs(t, cfg, prompt, 8)

	// A copy made while nothing is fetched yet: the holes are there.
	cp := filepath.Join(t.TempDir(), "copy")
	require.NoError(t, exec.Command("cp", "-a", cfg.ModelDir(), cp).Run())

	cfg.Run = app.RunConfig{Model: cfg.ModelDir(), IDs: prompt, MaxNew: len(want), JSON: true}
	before := h.Requests.Load()
	got, err := runIDs(t, cfg)
	require.NoError(t, err)
	require.Equal(t, want, got, "the mirror folder gives the checkpoint's tokens")
	require.Greater(t, h.Requests.Load(), before, "its missing experts came from the hub")

	require.NoError(t, os.Remove(filepath.Join(cp, ".deltafin", "manifest.json")))
	cfg.Run.Model = cp
	_, err = runIDs(t, cfg)
	require.ErrorIs(t, err, downloader.ErrMissing)
	require.Regexp(t, `model-\d+-of-\d+\.safetensors bytes \[\d+, \d+\)`, err.Error())
}

// TestRunRefusesUnverifiedBytes: a stream install from a hub without Xet
// hashes whose expert bytes come corrupted on demand. Nothing can check
// them, so run refuses the install by default, naming its state and the
// ways out; with --allow-unverified it runs (on the bytes as they are), and
// after fetch-experts (whole files, verified by sha256, the corruption
// found and fetched again) it runs by default and gives the checkpoint's
// tokens.
func TestRunRefusesUnverifiedBytes(t *testing.T) {
	t.Parallel()
	h := hubtest.New(t, filepath.Join("..", "testdata", "k3-tiny"))
	h.NoXet = true
	cfg := hubConfig(t, h)
	var out bytes.Buffer
	require.NoError(t, setup(t.Context(), cfg, SetupOptions{Mode: downloader.Stream, Headroom: 1, ChunkSize: 64 << 10}, &out))
	require.Contains(t, out.String(), "0% verified")
	prompt := ints(reference(t, "short.input_ids"))
	want := plainIDs(t, cfg, prompt, 8)
	// Every expert byte the hub sends while running is corrupted.
	var corrupting atomic.Bool
	corrupting.Store(true)
	h.SetFault(func(w http.ResponseWriter, r *http.Request, f *hubtest.File, start, end int64) bool {
		if !corrupting.Load() {
			return false
		}
		bad := append([]byte(nil), f.Data...)
		for i := start; i < end; i += 97 {
			bad[i] ^= 0x5a
		}
		hubtest.WriteRange(w, &hubtest.File{Path: f.Path, Data: bad}, start, end, int64(len(bad)))
		return true
	})

	cfg.Run = app.RunConfig{IDs: prompt, MaxNew: len(want), JSON: true}
	_, err := runIDs(t, cfg)
	require.ErrorIs(t, err, app.ErrUnverified)
	require.ErrorContains(t, err, "unverified")
	require.ErrorContains(t, err, "deltafin fetch-experts")
	require.ErrorContains(t, err, "--allow-unverified")

	allow := cfg
	allow.AllowUnverified = true
	_, err = runIDs(t, allow)
	require.NoError(t, err, "allowed, it runs on the bytes as they are")
	corrupting.Store(false)

	require.NoError(t, fetchExperts(t.Context(), cfg, FetchOptions{Headroom: 1, ChunkSize: 64 << 10}, io.Discard))
	got, err := runIDs(t, cfg)
	require.NoError(t, err)
	require.Equal(t, want, got, "complete and verified, the checkpoint's tokens")
}
