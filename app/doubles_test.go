package app

import (
	"context"
	"sync"
	"time"
)

// A warmer whose pace and length the tests choose: the idle and power
// logic around it is what they test.

// countingWarmer "fetches" experts one step at a time; interrupted runs
// resume where they stopped.
type countingWarmer struct {
	mu      sync.Mutex
	done    int
	total   int
	step    time.Duration
	started chan struct{} // receives when a run starts, if not nil
}

const expertBytes = 17_547_264

func (w *countingWarmer) Warm(ctx context.Context, progress func(Progress)) (WarmResult, error) {
	if w.started != nil {
		select {
		case w.started <- struct{}{}:
		default:
		}
	}
	var r WarmResult
	for {
		w.mu.Lock()
		left := w.done < w.total
		if left {
			w.done++
			r.Experts++
			r.Bytes += expertBytes
		}
		p := Progress{Done: int64(w.done) * expertBytes, Total: int64(w.total) * expertBytes}
		w.mu.Unlock()
		if !left {
			return r, nil
		}
		progress(p)
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-time.After(w.step):
		}
	}
}
