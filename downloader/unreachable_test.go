package downloader

import (
	"net"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestUnreachableHubIsNotRetriedUntilItAnswered: a refused connection or a
// name that does not resolve, before the hub ever answered, fails at the
// first try with the hint (a wrong HF_ENDPOINT does not heal); once it has
// answered, the same failure is a network that dropped: retried, and the
// first wait already says what to check.
func TestUnreachableHubIsNotRetriedUntilItAnswered(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	var msgs []string
	opts := testOptions("http://127.0.0.1:9", "", t.TempDir())
	opts.Clock, opts.Jitter = clk, func() float64 { return 0.5 }
	opts.Progress = func(e Event) {
		if e.Phase == PhaseWaiting {
			msgs = append(msgs, e.Message)
		}
	}
	m, err := Open(opts)
	require.NoError(t, err)
	defer m.Close()
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	notFound := &net.DNSError{Err: "no such host", Name: "hub.invalid", IsNotFound: true}
	for _, cause := range []error{refused, notFound} {
		rt := retrier{m: m, what: "tree listing"}
		err := rt.wait(t.Context(), cause)
		require.ErrorIs(t, err, ErrUnreachable)
	}
	require.Empty(t, clk.slept(), "no retry")
	require.Empty(t, msgs)

	m.hub.answered.Store(true)
	rt := retrier{m: m, what: "tree listing"}
	require.NoError(t, rt.wait(t.Context(), refused))
	require.Len(t, clk.slept(), 1, "retried")
	require.Len(t, msgs, 1)
	require.Contains(t, msgs[0], "cannot reach the hub at http://127.0.0.1:9 (set HF_ENDPOINT or check the network)", "the hint from the first retry")
}
