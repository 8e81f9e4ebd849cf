package cli

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/app"
	"github.com/deltafin/deltafin/downloader/hubtest"
)

// TestSetupDrafter installs the tiny drafter from the loopback hub as
// setup --drafter does: an interrupted install says how to continue and
// continues, the files are the hub's byte for byte and verified, and run,
// serve and the app (app.OpenModel) then draft with it.
func TestSetupDrafter(t *testing.T) {
	t.Parallel()
	h := hubtest.New(t, filepath.Join("..", "testdata", "k3-tiny-eagle3"))
	cfg := hubConfig(t, h)
	cfg.DrafterRepo, cfg.DrafterRevision = hubtest.Repo, "main" // the hub serves one repository
	const chunk = 64 << 10

	dir, err := app.InstalledDrafter(cfg)
	require.NoError(t, err)
	require.Empty(t, dir, "nothing installed yet")

	// The second range request cancels the install.
	ctx, cancel := context.WithCancel(t.Context())
	var ranges atomic.Int32
	h.SetFault(func(w http.ResponseWriter, r *http.Request, f *hubtest.File, start, end int64) bool {
		if ranges.Add(1) < 2 {
			return false
		}
		cancel()
		<-r.Context().Done()
		return true
	})
	err = setupDrafter(ctx, cfg, SetupOptions{Headroom: 1, ChunkSize: chunk}, &bytes.Buffer{})
	require.ErrorIs(t, err, context.Canceled)
	require.Contains(t, err.Error(), "run deltafin setup --drafter again to continue")
	dir, err = app.InstalledDrafter(cfg)
	require.NoError(t, err)
	require.Empty(t, dir, "an interrupted install is not recorded")

	h.SetFault(nil)
	before := h.Requests.Load()
	var out bytes.Buffer
	require.NoError(t, setupDrafter(t.Context(), cfg, SetupOptions{Headroom: 1, ChunkSize: chunk}, &out))
	require.Contains(t, out.String(), "drafter installed and verified in")
	dir, err = app.InstalledDrafter(cfg)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(cfg.DataDir, "drafters", "moonshotai--Kimi-K3", hubtest.Revision), dir)
	h.RequireIdentical(t, dir)
	require.Greater(t, h.Requests.Load(), before)

	// Again: nothing left to download.
	before = h.Requests.Load()
	require.NoError(t, setupDrafter(t.Context(), cfg, SetupOptions{Headroom: 1, ChunkSize: chunk}, &bytes.Buffer{}))
	h.WaitIdle()
	require.Less(t, h.Requests.Load()-before, int64(8), "a complete install fetches no file again")

	m, err := app.OpenModel(t.Context(), cfg, app.ModelRef{Dir: filepath.Join("..", "testdata", "k3-tiny")})
	require.NoError(t, err)
	require.Contains(t, m.Drafter, "EAGLE-3 MLA drafter")
	require.NoError(t, m.Close())
	cfg.Drafter = "off"
	m, err = app.OpenModel(t.Context(), cfg, app.ModelRef{Dir: filepath.Join("..", "testdata", "k3-tiny")})
	require.NoError(t, err)
	require.Empty(t, m.Drafter)
	require.NoError(t, m.Close())

	// A drafter that does not fit the model is left out under auto and
	// refused when named.
	cfg.Drafter = "auto"
	m, err = app.OpenModel(t.Context(), cfg, app.ModelRef{Dir: filepath.Join("..", "testdata", "kimi-linear-tiny", "hf")})
	require.NoError(t, err)
	require.Empty(t, m.Drafter)
	require.NoError(t, m.Close())
	cfg.Drafter = dir
	_, err = app.OpenModel(t.Context(), cfg, app.ModelRef{Dir: filepath.Join("..", "testdata", "kimi-linear-tiny", "hf")})
	require.ErrorContains(t, err, "open the drafter")

	// A damaged record is reported, not guessed at.
	require.NoError(t, os.WriteFile(filepath.Join(cfg.DataDir, "drafter.json"), []byte("{"), 0o644))
	_, err = app.InstalledDrafter(cfg)
	require.ErrorContains(t, err, "damaged")
}
