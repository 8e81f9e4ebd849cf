package server

import (
	"context"
	"testing"
	"time"

	"github.com/deltafin/deltafin/engine"
	"github.com/stretchr/testify/require"
)

func enter(t *testing.T, q *queue, id string) *ticket {
	t.Helper()
	tk, err := q.enter(id, "text_completion", 10, 20)
	require.NoError(t, err)
	return tk
}

func TestQueueRefusesWithoutDepth(t *testing.T) {
	t.Parallel()
	q := newQueue(0)
	a := enter(t, q, "a")
	require.NoError(t, a.wait(t.Context()))
	_, err := q.enter("b", "text_completion", 1, 1)
	require.ErrorIs(t, err, ErrBusy)
	busy, queued := q.counts()
	require.True(t, busy)
	require.Zero(t, queued)
	a.release()
	a.release() // idempotent: must not free a turn twice
	busy, _ = q.counts()
	require.False(t, busy)
	enter(t, q, "c").release()
}

func TestQueueIsFIFO(t *testing.T) {
	t.Parallel()
	q := newQueue(3)
	first := enter(t, q, "first")
	var line []*ticket
	for _, id := range []string{"0", "1", "2"} {
		line = append(line, enter(t, q, id))
	}
	_, err := q.enter("x", "text_completion", 1, 1)
	require.ErrorIs(t, err, ErrBusy, "the line holds 3")
	qs := q.status()
	require.Equal(t, "first", qs.Running.ID)
	require.Len(t, qs.Queued, 3)
	for i, st := range qs.Queued {
		require.Equal(t, line[i].st.ID, st.ID, "the snapshot lists the line in order")
		require.Equal(t, "queued", st.State)
	}

	order := make(chan int, 3)
	for i, tk := range line {
		go func() {
			if tk.wait(t.Context()) == nil {
				order <- i
				tk.release()
			}
		}()
	}
	first.release()
	for want := range 3 {
		select {
		case got := <-order:
			require.Equal(t, want, got)
		case <-time.After(10 * time.Second):
			t.Fatal("queued ticket never got its turn")
		}
	}
	busy, queued := q.counts()
	require.False(t, busy)
	require.Zero(t, queued)
}

func TestQueueWaiterLeaves(t *testing.T) {
	t.Parallel()
	q := newQueue(2)
	first := enter(t, q, "first")
	leaver := enter(t, q, "leaver")
	stayer := enter(t, q, "stayer")

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	require.ErrorIs(t, leaver.wait(ctx), context.Canceled)
	leaver.release()
	_, queued := q.counts()
	require.Equal(t, 1, queued)

	first.release()
	require.NoError(t, stayer.wait(t.Context()), "the turn skips the ticket that left")
	stayer.release()
	busy, _ := q.counts()
	require.False(t, busy)
}

func TestQueueGrantRacesCancel(t *testing.T) {
	t.Parallel()
	// A waiter whose ctx ends just as its turn comes must still hand the
	// turn on when it releases, or the engine would stay locked forever.
	q := newQueue(1)
	first := enter(t, q, "first")
	w := enter(t, q, "w")
	first.release() // w is granted
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_ = w.wait(ctx) // either outcome; the owner releases regardless
	w.release()
	busy, queued := q.counts()
	require.False(t, busy)
	require.Zero(t, queued)
}

// TestQueueProgress: the snapshot's prompt progress and ETAs follow the
// rates measured on a finished generation (a fake clock, no sleeps).
func TestQueueProgress(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	q := newQueue(2)
	q.now = func() time.Time { return now }
	a := enter(t, q, "a")
	require.Nil(t, q.status().Running.ETASeconds, "no ETA before a measurement")
	a.measure(engine.Result{PromptTokens: 100, Prefill: time.Second, Tokens: 11, Decode: 5 * time.Second})
	a.release()

	b := enter(t, q, "b") // 10 prompt tokens, at most 20 new
	c := enter(t, q, "c")
	b.prefill(10)
	now = now.Add(50 * time.Millisecond) // 5 of 10 prompt tokens at 100/s
	qs := q.status()
	require.Equal(t, "prefilling", qs.Running.State)
	require.Equal(t, 5, qs.Running.PromptDone)
	require.InDelta(t, 0.05+10, *qs.Running.ETASeconds, 1e-9, "5 prompt tokens at 100/s, then 20 at 2/s")
	b.token()
	qs = q.status()
	require.Equal(t, "generating", qs.Running.State)
	require.Equal(t, 10, qs.Running.PromptDone)
	require.Equal(t, 1, qs.Running.Tokens)
	require.InDelta(t, 9.5, *qs.Running.ETASeconds, 1e-9)
	require.Equal(t, "c", qs.Queued[0].ID)
	require.InDelta(t, 9.5+0.1+10, *qs.Queued[0].ETASeconds, 1e-9, "the job ahead, then its own")
	require.InDelta(t, 0.05, qs.Queued[0].WaitedSeconds, 1e-9)
	// The counts the web page draws: every token generated, and the
	// finished generations' figures.
	require.Equal(t, int64(1), qs.Generated)
	require.Equal(t, []Generation{{ID: "a", PromptTokens: 100, Tokens: 11, PrefillSeconds: 1, DecodeSeconds: 5}}, qs.Recent)
	b.release()
	c.release()
}

// TestQueueRateIsMeasuredOverRealLengths: a max_tokens 1 request (its one
// token from the prefill, microseconds of "decode") measures nothing: no
// rate and no ETA until generations of real length were timed, and a short
// one afterwards barely moves the rate.
func TestQueueRateIsMeasuredOverRealLengths(t *testing.T) {
	t.Parallel()
	q := newQueue(2)
	a := enter(t, q, "a")
	a.measure(engine.Result{PromptTokens: 5, Prefill: 50 * time.Millisecond, Tokens: 1, Decode: 17 * time.Microsecond})
	qs := q.status()
	require.Zero(t, qs.DecodeRate, "one token decoded nothing")
	require.Nil(t, qs.Running.ETASeconds, "no ETA until measured")
	a.measure(engine.Result{PromptTokens: 5, Prefill: 50 * time.Millisecond, Tokens: 5, Decode: 2 * time.Second})
	require.Zero(t, q.status().DecodeRate, "4 decoded tokens are too few to measure")
	a.measure(engine.Result{PromptTokens: 5, Prefill: 50 * time.Millisecond, Tokens: 17, Decode: 8 * time.Second})
	qs = q.status()
	require.InDelta(t, 20.0/10, qs.DecodeRate, 1e-9, "20 tokens in 10 s")
	require.NotNil(t, qs.Running.ETASeconds)
	a.measure(engine.Result{PromptTokens: 5, Prefill: 50 * time.Millisecond, Tokens: 1, Decode: 17 * time.Microsecond})
	require.InDelta(t, 2, q.status().DecodeRate, 1e-9, "a one-token request moves nothing")
	a.release()
}
