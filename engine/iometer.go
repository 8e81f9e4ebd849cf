package engine

import (
	"sync"
	"time"
)

// ioMeter watches the reads in flight of one model (its expert store and
// its spine ring together): how long the disk had none, and the mean
// number in flight. bench slice reports them for the engine decode: a
// streaming engine should never leave the disk idle.
type ioMeter struct {
	mu       sync.Mutex
	inflight int
	since    time.Time     // last change of inflight
	idle     time.Duration // time with nothing in flight
	depth    float64       // ∫ inflight dt, in seconds
}

// ioMeterStats is an ioMeter reading.
type ioMeterStats struct {
	idle  time.Duration // with no read in flight
	depth float64       // reads in flight integrated over time (seconds)
}

func (m *ioMeter) change(d int) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.advance(time.Now())
	m.inflight += d
	m.mu.Unlock()
}

// advance accounts the time since the last change. Called with mu held.
func (m *ioMeter) advance(now time.Time) {
	if !m.since.IsZero() {
		dt := now.Sub(m.since)
		if m.inflight == 0 {
			m.idle += dt
		}
		m.depth += float64(m.inflight) * dt.Seconds()
	}
	m.since = now
}

func (m *ioMeter) stats() ioMeterStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.advance(time.Now())
	return ioMeterStats{idle: m.idle, depth: m.depth}
}
