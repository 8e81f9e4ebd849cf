package cli

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/downloader"
	"github.com/deltafin/deltafin/downloader/hubtest"
)

// TestSetupSaysVerifiedOnlyForVerifiedBytes: a stream install holds its
// shards in part. Against a hub without Xet their spine is present and not
// verified, and setup says so instead of "verified"; once fetch-experts
// completes the shards every byte is verified and setup says that. Against
// a hub with Xet the spine is verified by the shards' Xet hashes, and
// setup says how.
func TestSetupSaysVerifiedOnlyForVerifiedBytes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	t.Run("without Xet", func(t *testing.T) {
		t.Parallel()
		h := hubtest.New(t, filepath.Join("..", "testdata", "k3-tiny"))
		h.NoXet = true
		cfg := hubConfig(t, h)
		var out bytes.Buffer
		require.NoError(t, setup(ctx, cfg, SetupOptions{Mode: downloader.Stream, Headroom: 1}, &out))
		require.NotContains(t, out.String(), "complete and verified")
		require.Regexp(t, `stream install complete, 100% present, \d+% verified: some bytes of shards held in part could not be checked against a Xet hash`, out.String())
		require.Contains(t, out.String(), "\nspine: 100% present, 0% verified\n")

		out.Reset()
		require.NoError(t, fetchExperts(ctx, cfg, FetchOptions{Headroom: 1}, &out))
		out.Reset()
		require.NoError(t, setup(ctx, cfg, SetupOptions{Mode: downloader.Stream, Headroom: 1}, &out))
		require.Contains(t, out.String(), "stream install complete and verified (every file matches the hub's sha256)")
	})
	t.Run("with Xet", func(t *testing.T) {
		t.Parallel()
		h := hubtest.New(t, filepath.Join("..", "testdata", "k3-tiny"))
		cfg := hubConfig(t, h)
		var out bytes.Buffer
		require.NoError(t, setup(ctx, cfg, SetupOptions{Mode: downloader.Stream, Headroom: 1}, &out))
		require.Contains(t, out.String(), "stream install complete and verified (complete files match the hub's sha256, the parts of shards held in part their Xet hashes)")
		require.Contains(t, out.String(), "\nspine: 100% present, 100% verified\n")
		require.Positive(t, h.CASRequests.Load())
	})
}
