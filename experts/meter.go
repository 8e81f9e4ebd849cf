package experts

import (
	"sync"
	"time"
)

// Meter watches the reads in flight of one model (its expert store and
// its spine ring together): how long the disk had none, and the mean
// number in flight. bench slice reports them for the engine decode: a
// streaming engine should never leave the disk idle.
type Meter struct {
	mu       sync.Mutex
	inflight int
	since    time.Time     // last change of inflight
	idle     time.Duration // time with nothing in flight
	depth    float64       // ∫ inflight dt, in seconds
}

// MeterStats is an Meter reading.
type MeterStats struct {
	Idle  time.Duration // with no read in flight
	Depth float64       // reads in flight integrated over time (seconds)
}

// Change counts d more reads in flight (d < 0: fewer). A nil Meter counts
// nothing.
func (m *Meter) Change(d int) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.advance(time.Now())
	m.inflight += d
	m.mu.Unlock()
}

// advance accounts the time since the last change. Called with mu held.
func (m *Meter) advance(now time.Time) {
	if !m.since.IsZero() {
		dt := now.Sub(m.since)
		if m.inflight == 0 {
			m.idle += dt
		}
		m.depth += float64(m.inflight) * dt.Seconds()
	}
	m.since = now
}

// Stats reads the meter now.
func (m *Meter) Stats() MeterStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.advance(time.Now())
	return MeterStats{Idle: m.idle, Depth: m.depth}
}
