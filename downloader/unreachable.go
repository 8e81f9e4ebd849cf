package downloader

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"
)

// A hub that cannot be reached: its name does not resolve, or nothing
// listens at its address. Neither heals by waiting when the hub has never
// answered (a wrong HF_ENDPOINT, no network), so the first such failure
// is returned at once, with the hint, instead of being retried for the
// whole RetryBudget; once the hub has answered in this process the same
// failures are a network that dropped, and are retried, each wait saying
// why.

// ErrUnreachable: the hub's name does not resolve or nothing answers at
// its address.
var ErrUnreachable = errors.New("downloader: cannot reach the hub")

// unreachable reports whether err is a failure to reach the host at all:
// a name that does not resolve, or a refused connection.
func unreachable(err error) bool {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return dns.IsNotFound || !dns.IsTemporary
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial" && errors.Is(err, syscall.ECONNREFUSED)
}

// unreachableHint is the message of a wait or a failure that reaching
// the hub caused.
func (m *Mirror) unreachableHint() string {
	return fmt.Sprintf("cannot reach the hub at %s (set HF_ENDPOINT or check the network)", m.opts.Endpoint)
}

// answeredTransport marks its hub answered when a response arrives.
type answeredTransport struct {
	next http.RoundTripper
	h    *hub
}

func (t answeredTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	next := t.next
	if next == nil {
		next = http.DefaultTransport
	}
	resp, err := next.RoundTrip(req)
	if err == nil {
		t.h.answered.Store(true)
	}
	return resp, err
}
