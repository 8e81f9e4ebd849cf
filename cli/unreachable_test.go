package cli

import (
	"bytes"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/app"
	"github.com/deltafin/deltafin/downloader"
)

// TestDryRunOfAHubThatCannotBeReached: HF_ENDPOINT names a port nothing
// listens on, or a name that cannot resolve (.invalid, RFC 6761). Neither
// heals by waiting, so `setup --dry-run` fails at the first try (no retry
// for the two-minute budget) with the HF_ENDPOINT/network hint.
func TestDryRunOfAHubThatCannotBeReached(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := "http://" + l.Addr().String()
	require.NoError(t, l.Close())
	for _, endpoint := range []string{closed, "http://deltafin-hub.invalid"} {
		t.Run(endpoint, func(t *testing.T) {
			t.Parallel()
			cfg := app.DefaultConfig(func(k string) string {
				return map[string]string{"HF_ENDPOINT": endpoint}[k]
			})
			cfg.DataDir = t.TempDir()
			require.NoError(t, cfg.Validate())
			var out bytes.Buffer
			start := time.Now()
			err := setup(t.Context(), cfg, SetupOptions{Mode: downloader.Auto, DryRun: true, Headroom: 1}, &out)
			took := time.Since(start)
			require.ErrorIs(t, err, app.ErrUnreachable)
			require.ErrorContains(t, err, "set HF_ENDPOINT or check the network")
			require.NotContains(t, err.Error(), "giving up after", "not retried")
			t.Logf("%s: the hint after %v: %v", endpoint, took.Round(time.Millisecond), err)
		})
	}
}
