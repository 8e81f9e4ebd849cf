package app

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/deltafin/deltafin/experts"
	"github.com/deltafin/deltafin/internal/sysinfo"
)

// memWatchEvery is how often the memory monitor reads the available RAM.
const memWatchEvery = 2 * time.Second

// cacheSizer is what the memory monitor resizes: the engine's model.
type cacheSizer interface {
	Plan() experts.BudgetPlan
	SetCacheBudget(bytes int64) int64
}

// memWatch keeps a running model out of the out-of-memory killer: the plan
// left a headroom of free memory above Deltafin (experts.Headroom), and when
// other programs eat into it the expert cache, the one part of the plan
// that can shrink without reopening, gives the shortfall back. When memory
// comes back the cache grows again, never past its plan, and only with
// twice the headroom free so that it does not flap.
type memWatch struct {
	model cacheSizer
	read  func() (sysinfo.Memory, error) // sysinfo.ReadMemory; tests inject
	log   *slog.Logger

	mu      sync.Mutex
	cache   int64 // the cache's budget now
	starved bool  // the cache is empty and memory is still short (said once)
}

func newMemWatch(m cacheSizer, read func() (sysinfo.Memory, error), log *slog.Logger) *memWatch {
	return &memWatch{model: m, read: read, log: log, cache: m.Plan().CacheBytes}
}

// floor is the free memory the monitor defends: the plan's headroom, or
// under --ram-gb (which keeps none) the smallest headroom there is.
func (w *memWatch) floor() int64 {
	return max(w.model.Plan().Reserve, experts.Headroom(0))
}

// check reads the available memory once and resizes the cache; it returns
// the cache's budget after.
func (w *memWatch) check() int64 {
	mem, err := w.read()
	if err != nil {
		return w.cache
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	avail, floor, planned := int64(mem.Available), w.floor(), w.model.Plan().CacheBytes
	switch {
	case avail < floor && w.cache > 0:
		was := w.cache
		w.cache = w.model.SetCacheBudget(w.cache - (floor - avail))
		w.log.Warn("memory is running short: the expert cache shrinks to stay clear of the out-of-memory killer",
			"available", fmtGB(avail), "kept_free", fmtGB(floor), "cache_was", fmtGB(was), "cache_now", fmtGB(w.cache))
	case avail < floor && !w.starved:
		w.starved = true
		w.log.Warn("memory is running short and the expert cache is already empty: close other programs, or restart Deltafin to plan for what is left",
			"available", fmtGB(avail), "kept_free", fmtGB(floor))
	case avail > 2*floor && w.cache < planned:
		w.starved = false
		was := w.cache
		w.cache = w.model.SetCacheBudget(w.cache + (avail - 2*floor))
		if w.cache != was {
			w.log.Info("memory is back: the expert cache grows again", "available", fmtGB(avail), "cache_now", fmtGB(w.cache), "planned", fmtGB(planned))
		}
	}
	return w.cache
}

// run checks every memWatchEvery until ctx ends.
func (w *memWatch) run(ctx context.Context) {
	t := time.NewTicker(memWatchEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.check()
		}
	}
}

func fmtGB(n int64) string { return FormatBytes(uint64(max(n, 0))) }

// WatchMemory starts the memory monitor (memWatch) for a streamed model;
// it stops when the model closes. A model without an expert cache has
// nothing to shrink and is not watched.
func (m *Model) WatchMemory(log *slog.Logger) {
	if m.Plan().CacheBytes <= 0 || m.stopWatch != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	// Close waits for the monitor, so it never resizes a closed model.
	m.stopWatch = func() { cancel(); <-done }
	go func() {
		defer close(done)
		newMemWatch(m.Model, sysinfo.ReadMemory, log).run(ctx)
	}()
}
