package server

import (
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeClock is the throttle's clock: time moves only when the test says.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// clientFrom is an HTTP client whose connections come from the loopback
// address local (127.0.0.0/8 is all loopback on Linux).
func clientFrom(local string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

// API-key guessing is throttled per client address: 60 wrong keys get five
// 401s and then 429s with Retry-After; the right key from another address
// works at once, and from the guessing one once its wait is over. Over a
// minute of the throttle's clock, the guesses answered are counted.
func TestAPIKeyGuessingThrottled(t *testing.T) {
	t.Parallel()
	s, base := startServer(t, func(o *Options) { o.APIKey = "sesame" })
	clk := &fakeClock{t: time.Unix(1e9, 0)}
	s.throttle.mu.Lock()
	s.throttle.now = clk.now
	s.throttle.mu.Unlock()
	models := func(c *http.Client, key string) (int, http.Header) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/v1/models", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := c.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode, resp.Header
	}
	guesser, other := clientFrom("127.0.0.1"), clientFrom("127.0.0.2")
	if _, err := other.Get(base + "/health"); err != nil && strings.Contains(err.Error(), "assign") {
		t.Skip("127.0.0.2 is not a local address here")
	}
	answered := 0
	for i := range 60 {
		code, h := models(guesser, "guess"+strconv.Itoa(i))
		switch {
		case i < keyBurst:
			require.Equal(t, http.StatusUnauthorized, code, "guess %d", i)
			answered++
		default:
			require.Equal(t, http.StatusTooManyRequests, code, "guess %d", i)
			require.Equal(t, "1", h.Get("Retry-After"))
		}
	}
	code, _ := models(guesser, "sesame")
	require.Equal(t, http.StatusTooManyRequests, code, "while throttled not even the right key is compared: no oracle")
	code, _ = models(other, "sesame")
	require.Equal(t, http.StatusOK, code, "another address is unaffected")
	clk.add(keyRefill)
	code, _ = models(guesser, "sesame")
	require.Equal(t, http.StatusOK, code, "the right key works once the wait is over, and takes no token")
	code, _ = models(guesser, "sesame")
	require.Equal(t, http.StatusOK, code)

	// Guessing flat out for a minute of the clock: one request every 10 ms.
	start := answered
	for range 6000 {
		clk.add(10 * time.Millisecond)
		if code, _ := models(guesser, "nope"); code == http.StatusUnauthorized {
			answered++
		}
	}
	perSecond := float64(answered-start) / 60
	t.Logf("wrong keys answered: %d in the first burst, then %.2f per second (%d in 60 s)", keyBurst, perSecond, answered-start)
	require.LessOrEqual(t, perSecond, 1.05)
}
