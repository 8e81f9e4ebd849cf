package downloader

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeClock advances only when a retry sleeps, so a test proves the
// retries' timing without waiting for it.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	return nil
}

func (c *fakeClock) slept() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

// busyFault answers the first n CDN requests with status and the
// Retry-After header from after (none when it returns ""), and records the
// fake time of every request.
func busyFault(clk *fakeClock, n, status int, after func(now time.Time) string) (func(http.ResponseWriter, *http.Request, *fakeFile, int64, int64) bool, func() []time.Time) {
	var mu sync.Mutex
	var seen []time.Time
	return func(w http.ResponseWriter, r *http.Request, f *fakeFile, start, end int64) bool {
			now := clk.Now()
			mu.Lock()
			seen = append(seen, now)
			k := len(seen)
			mu.Unlock()
			if n >= 0 && k > n {
				return false
			}
			if v := after(now); v != "" {
				w.Header().Set("Retry-After", v)
			}
			http.Error(w, "slow down", status)
			return true
		}, func() []time.Time {
			mu.Lock()
			defer mu.Unlock()
			return append([]time.Time(nil), seen...)
		}
}

func TestRetryAfterSecondsIsHonoured(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			t.Parallel()
			h := newFakeHub(t)
			clk := newFakeClock()
			fault, seen := busyFault(clk, 1, status, func(time.Time) string { return "5" })
			h.SetFault(fault)
			opts := options(h, t.TempDir())
			opts.Clock, opts.Jitter, opts.Jobs = clk, func() float64 { return 0.5 }, 1
			m, err := Open(opts)
			require.NoError(t, err)
			defer m.Close()
			_, err = m.Plan(t.Context())
			require.NoError(t, err)
			s := seen()
			require.GreaterOrEqual(t, len(s), 2)
			require.GreaterOrEqual(t, s[1].Sub(s[0]), 5*time.Second, "the next request waits for Retry-After")
			require.Equal(t, []time.Duration{5*time.Second + opts.BackoffBase/2}, clk.slept())
		})
	}
}

func TestRetryAfterDateAndWaitEvent(t *testing.T) {
	t.Parallel()
	h := newFakeHub(t)
	clk := newFakeClock()
	fault, _ := busyFault(clk, 1, http.StatusTooManyRequests, func(now time.Time) string {
		return now.Add(30 * time.Second).Format(http.TimeFormat)
	})
	h.SetFault(fault)
	opts := options(h, t.TempDir())
	opts.Clock, opts.Jitter, opts.Jobs = clk, func() float64 { return 0 }, 1
	var mu sync.Mutex
	var waits []Event
	opts.Progress = func(ev Event) {
		if ev.Phase == PhaseWaiting {
			mu.Lock()
			waits = append(waits, ev)
			mu.Unlock()
		}
	}
	m, err := Open(opts)
	require.NoError(t, err)
	defer m.Close()
	_, err = m.Plan(t.Context())
	require.NoError(t, err)
	require.Equal(t, []time.Duration{30 * time.Second}, clk.slept())
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, waits, 1)
	require.Equal(t, "waiting for the hub (rate limited), retrying in 30 s", waits[0].Message)
	require.True(t, waits[0].RateLimited)
	require.Equal(t, 30*time.Second, waits[0].RetryIn)
}

// TestConstantRateLimitUsesTheTimeBudget: a hub that answers 429 forever is
// asked again for RateLimitBudget (minutes of fake time, every wait the
// Retry-After), not for a handful of quick tries.
func TestConstantRateLimitUsesTheTimeBudget(t *testing.T) {
	t.Parallel()
	h := newFakeHub(t)
	clk := newFakeClock()
	fault, seen := busyFault(clk, -1, http.StatusTooManyRequests, func(time.Time) string { return "30" })
	h.SetFault(fault)
	opts := options(h, t.TempDir())
	opts.Clock, opts.Jitter, opts.Jobs, opts.Attempts = clk, func() float64 { return 0 }, 1, 0
	opts.RateLimitBudget = 5 * time.Minute
	m, err := Open(opts)
	require.NoError(t, err)
	defer m.Close()
	_, err = m.Plan(t.Context())
	require.ErrorContains(t, err, "429")
	require.ErrorContains(t, err, "giving up after 11 attempts over 5m0s")
	s := seen()
	require.Len(t, s, 11)
	require.Equal(t, 5*time.Minute, s[len(s)-1].Sub(s[0]))
	for _, d := range clk.slept() {
		require.Equal(t, 30*time.Second, d)
	}
}

// TestBackoffIsExponentialWithJitter: without Retry-After, 5xx waits grow
// as base·2^n scaled by the jitter source, capped at BackoffMax, until the
// time budget runs out.
func TestBackoffIsExponentialWithJitter(t *testing.T) {
	t.Parallel()
	h := newFakeHub(t)
	clk := newFakeClock()
	fault, _ := busyFault(clk, -1, http.StatusBadGateway, func(time.Time) string { return "" })
	h.SetFault(fault)
	opts := options(h, t.TempDir())
	opts.Clock, opts.Jobs, opts.Attempts = clk, 1, 0
	opts.Jitter = func() float64 { return 0.5 }
	opts.BackoffBase, opts.BackoffMax, opts.RetryBudget = time.Second, 8*time.Second, 30*time.Second
	m, err := Open(opts)
	require.NoError(t, err)
	defer m.Close()
	_, err = m.Plan(t.Context())
	require.ErrorContains(t, err, "502")
	// 0.5·(1, 2, 4, 8, 8, 8...) s until the next wait would pass 30 s.
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second, 4 * time.Second, 4 * time.Second, 4 * time.Second, 4 * time.Second}
	require.Equal(t, want, clk.slept())
}

func TestRetryAfterParsing(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"":                              0,
		"7":                             7 * time.Second,
		" 120 ":                         2 * time.Minute,
		"-3":                            0,
		"soon":                          0,
		"Tue, 01 Dec 2026 12:00:45 GMT": 45 * time.Second,
		"Tue, 01 Dec 2026 11:59:00 GMT": 0,
	} {
		require.Equal(t, want, retryAfter(v, now), "Retry-After %q", v)
	}
}

// TestListingWaitsForRetryAfter: the tree listing, too, waits as long as a
// 429's Retry-After says, then goes on.
func TestListingWaitsForRetryAfter(t *testing.T) {
	t.Parallel()
	h := newFakeHub(t)
	clk := newFakeClock()
	var mu sync.Mutex
	n := 0
	h.SetListFault(func(w http.ResponseWriter) bool {
		mu.Lock()
		defer mu.Unlock()
		if n++; n > 1 {
			return false
		}
		w.Header().Set("Retry-After", "12")
		http.Error(w, "slow down", http.StatusTooManyRequests)
		return true
	})
	opts := options(h, t.TempDir())
	opts.Clock, opts.Jitter = clk, func() float64 { return 0 }
	m, err := Open(opts)
	require.NoError(t, err)
	defer m.Close()
	_, err = m.Plan(t.Context())
	require.NoError(t, err)
	require.Equal(t, []time.Duration{12 * time.Second}, clk.slept())
}
