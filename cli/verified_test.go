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
// shards in part, so their spine is present and not verified, and setup
// says so instead of "verified"; once fetch-experts completes the shards
// every byte is verified and setup says that.
func TestSetupSaysVerifiedOnlyForVerifiedBytes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	h := hubtest.New(t, filepath.Join("..", "testdata", "k3-tiny"))
	cfg := hubConfig(t, h)
	var out bytes.Buffer
	require.NoError(t, setup(ctx, cfg, SetupOptions{Mode: downloader.Stream, Headroom: 1}, &out))
	require.NotContains(t, out.String(), "complete and verified")
	require.Contains(t, out.String(), "stream install complete, not all of it verified")
	require.Contains(t, out.String(), "\nspine: 100% present, 0% verified\n")

	out.Reset()
	require.NoError(t, fetchExperts(ctx, cfg, FetchOptions{Headroom: 1}, &out))
	out.Reset()
	require.NoError(t, setup(ctx, cfg, SetupOptions{Mode: downloader.Stream, Headroom: 1}, &out))
	require.Contains(t, out.String(), "stream install complete and verified (every file matches the hub's sha256)")
}
