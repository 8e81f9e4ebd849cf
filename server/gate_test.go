package server

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestGateRefusesWithoutQueue(t *testing.T) {
	g := newGate(0)
	a, err := g.enter()
	require.NoError(t, err)
	require.NoError(t, a.wait(t.Context()))
	_, err = g.enter()
	require.ErrorIs(t, err, ErrBusy)
	busy, queued := g.status()
	require.True(t, busy)
	require.Zero(t, queued)
	a.release()
	a.release() // idempotent: must not free a turn twice
	busy, _ = g.status()
	require.False(t, busy)
	b, err := g.enter()
	require.NoError(t, err)
	b.release()
}

func TestGateQueueIsFIFO(t *testing.T) {
	g := newGate(3)
	first, err := g.enter()
	require.NoError(t, err)
	var line []*ticket
	for range 3 {
		tk, err := g.enter()
		require.NoError(t, err)
		line = append(line, tk)
	}
	_, err = g.enter()
	require.ErrorIs(t, err, ErrBusy, "the line holds 3")
	_, queued := g.status()
	require.Equal(t, 3, queued)

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
	busy, queued := g.status()
	require.False(t, busy)
	require.Zero(t, queued)
}

func TestGateWaiterLeaves(t *testing.T) {
	g := newGate(2)
	first, err := g.enter()
	require.NoError(t, err)
	leaver, err := g.enter()
	require.NoError(t, err)
	stayer, err := g.enter()
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	require.ErrorIs(t, leaver.wait(ctx), context.Canceled)
	leaver.release()
	_, queued := g.status()
	require.Equal(t, 1, queued)

	first.release()
	require.NoError(t, stayer.wait(t.Context()), "the turn skips the ticket that left")
	stayer.release()
	busy, _ := g.status()
	require.False(t, busy)
}

func TestGateGrantRacesCancel(t *testing.T) {
	// A waiter whose ctx ends just as its turn comes must still hand the
	// turn on when it releases, or the engine would stay locked forever.
	g := newGate(1)
	first, err := g.enter()
	require.NoError(t, err)
	w, err := g.enter()
	require.NoError(t, err)
	first.release() // w is granted
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_ = w.wait(ctx) // either outcome; the owner releases regardless
	w.release()
	busy, queued := g.status()
	require.False(t, busy)
	require.Zero(t, queued)
}
