package downloader

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// A Clock tells the time and waits; retries use it, so a test proves their
// timing with a fake clock instead of sleeping.
type Clock interface {
	Now() time.Time
	// Sleep waits d or until ctx is done (then it returns ctx.Err()).
	Sleep(ctx context.Context, d time.Duration) error
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// defaultJitter draws from the runtime's randomly seeded generator (never a
// clock seed); Options.Jitter replaces it in tests.
func defaultJitter() float64 { return rand.Float64() }

// hubBusyError is a 429 or 503 answer: the hub asks us to slow down, maybe
// saying for how long (Retry-After).
type hubBusyError struct {
	err         error
	after       time.Duration // from Retry-After; 0 when absent
	rateLimited bool          // 429
}

func (e *hubBusyError) Error() string { return e.err.Error() }
func (e *hubBusyError) Unwrap() error { return e.err }

// retryAfter parses a Retry-After header: delay-seconds or an HTTP date
// (RFC 9110 §10.2.3), relative to now. It returns 0 when absent or invalid.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s < 0 {
			return 0
		}
		return time.Duration(min(s, int64(24*time.Hour/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, t.Sub(now))
	}
	return 0
}

// retrier decides, for one range transfer, whether and how long to wait
// after a transient failure. Its budgets are in time since the last
// progress: RetryBudget for ordinary failures, RateLimitBudget while the
// hub answers 429/503.
type retrier struct {
	m        *Mirror
	what     string
	since    time.Time // first failure since the last progress
	attempts int
}

// progressed resets the budget: the transfer moved forward.
func (r *retrier) progressed() { r.since, r.attempts = time.Time{}, 0 }

// wait sleeps before the next try or returns why there is none.
func (r *retrier) wait(ctx context.Context, err error) error {
	o := &r.m.opts
	now := o.Clock.Now()
	if r.since.IsZero() {
		r.since = now
	}
	r.attempts++
	if unreachable(err) && !r.m.hub.answered.Load() {
		return permanent(fmt.Errorf("%w: %s: %w", ErrUnreachable, r.what, err)) // the app adds the HF_ENDPOINT hint
	}
	var busy *hubBusyError
	isBusy := errors.As(err, &busy)
	budget := o.RetryBudget
	d := r.backoff()
	if isBusy {
		if busy.rateLimited {
			budget = o.RateLimitBudget
		}
		if busy.after > 0 {
			// The hub said when: wait that long, plus a little jitter so that
			// parallel streams do not return in the same instant.
			d = busy.after + time.Duration(o.Jitter()*float64(o.BackoffBase))
		}
	}
	spent := now.Sub(r.since)
	if (o.Attempts > 0 && r.attempts >= o.Attempts) || spent+d > budget {
		return fmt.Errorf("downloader: %s: giving up after %d attempts over %v: %w", r.what, r.attempts, spent.Round(time.Millisecond), err)
	}
	hint := ""
	if unreachable(err) || isNetError(err) {
		hint = r.m.unreachableHint() // from the first retry: the user may be able to fix it
	}
	if isBusy || d >= time.Second || hint != "" {
		r.m.prog.waiting(d, isBusy && busy.rateLimited, hint)
		defer r.m.prog.waited()
	}
	return o.Clock.Sleep(ctx, d)
}

// backoff is exponential with full jitter: uniform in [0, base·2^(n-1)],
// capped at BackoffMax, so that parallel retries spread out.
func (r *retrier) backoff() time.Duration {
	o := &r.m.opts
	d := o.BackoffBase << min(r.attempts-1, 20)
	if d > o.BackoffMax || d <= 0 {
		d = o.BackoffMax
	}
	return time.Duration(o.Jitter() * float64(d))
}

// WaitMessage is what a user reads while the downloader waits for the hub.
func WaitMessage(d time.Duration, rateLimited bool) string {
	why := "after an error"
	if rateLimited {
		why = "rate limited"
	}
	return fmt.Sprintf("waiting for the hub (%s), retrying in %d s", why, int((d+time.Second/2)/time.Second))
}

// isNetError: a failure below HTTP (dial, DNS, a dropped connection).
func isNetError(err error) bool {
	var op *net.OpError
	var dns *net.DNSError
	return errors.As(err, &op) || errors.As(err, &dns)
}

// list is the hub's tree listing, retried like a transfer: a rate-limited
// or failing hub is asked again after its Retry-After or a backoff.
func (m *Mirror) list(ctx context.Context) ([]Entry, error) {
	rt := retrier{m: m, what: "tree listing of " + m.opts.Repo}
	for {
		all, err := m.hub.list(ctx)
		if err == nil || ctx.Err() != nil || isPermanent(err) || errors.Is(err, ErrProtocol) {
			return all, err
		}
		if err := rt.wait(ctx, err); err != nil {
			return nil, err
		}
	}
}
