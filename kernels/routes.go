package kernels

import (
	"sync/atomic"
	"time"
)

// RouteStats is where a split backend's batched work ran and how long it
// took there, from its creation: for each side (the GPU's prefill backend,
// the CPU's decode backend) and each kind of call, the calls and the
// seconds the caller waited for them. A prompt's time to first token less
// these sums is the engine's own work (norms, the delta rule, routing,
// waiting for the disk); `bench slice --prefill` reports it so that a
// GPU's share of a prompt is measured, not guessed.
type RouteStats struct {
	GPU, CPU RouteSide
	// Uploaded is the bytes of weights the GPU copied to its memory to
	// keep them resident, and the seconds that took (inside the GPU's
	// calls): what a first prompt pays and the next ones do not.
	Uploaded struct {
		Bytes   int64   `json:"bytes"`
		Seconds float64 `json:"seconds"`
	}
	// Device is the GPU's own clock (DeviceTimer; zero where it keeps
	// none): the seconds its shaders ran and those it spent copying
	// operands between host and device memory, counted from the device's
	// open (which other backends on the same device share), so only the
	// difference of two snapshots (Sub) is one prompt's. The GPU side's
	// seconds less both are the host's part of its calls (copies into the
	// mapped slots, submissions, waits).
	Device struct {
		Shaders float64 `json:"shaders_seconds"`
		Copies  float64 `json:"copies_seconds"`
	}
}

// RouteSide is one side of a RouteStats. Single positions (decode) are
// left out: a token's hundreds of small products would cost a clock read
// each and say nothing about prefill.
type RouteSide struct {
	MatMul, Experts, Attention RouteCount
}

// RouteCount is a number of calls, the positions they carried (for the
// experts: what PlanExperts' cost model is fitted to) and the seconds
// they took.
type RouteCount struct {
	Calls     int64   `json:"calls"`
	Positions int64   `json:"positions"`
	Seconds   float64 `json:"seconds"`
}

// Sub is r less an earlier snapshot.
func (r RouteStats) Sub(o RouteStats) RouteStats {
	sub := func(a, b RouteSide) RouteSide {
		c := func(x, y RouteCount) RouteCount {
			return RouteCount{x.Calls - y.Calls, x.Positions - y.Positions, x.Seconds - y.Seconds}
		}
		return RouteSide{c(a.MatMul, b.MatMul), c(a.Experts, b.Experts), c(a.Attention, b.Attention)}
	}
	d := RouteStats{GPU: sub(r.GPU, o.GPU), CPU: sub(r.CPU, o.CPU)}
	d.Uploaded.Bytes, d.Uploaded.Seconds = r.Uploaded.Bytes-o.Uploaded.Bytes, r.Uploaded.Seconds-o.Uploaded.Seconds
	d.Device.Shaders, d.Device.Copies = r.Device.Shaders-o.Device.Shaders, r.Device.Copies-o.Device.Copies
	return d
}

// Seconds is the side's total.
func (s RouteSide) Seconds() float64 {
	return s.MatMul.Seconds + s.Experts.Seconds + s.Attention.Seconds
}

// Routes returns be's RouteStats when be is a split backend ("auto" with
// a GPU, "gpu"), and false otherwise.
func Routes(be Backend) (RouteStats, bool) {
	s, ok := be.(split)
	if !ok || s.meter == nil {
		return RouteStats{}, false
	}
	r := s.meter.snapshot()
	if u, ok := s.prefill.(interface{ Uploaded() (int64, time.Duration) }); ok {
		n, d := u.Uploaded()
		r.Uploaded.Bytes, r.Uploaded.Seconds = n, d.Seconds()
	}
	if t, ok := s.prefill.(DeviceTimer); ok {
		if sh, cp, ok := t.DeviceTimes(); ok {
			r.Device.Shaders, r.Device.Copies = sh.Seconds(), cp.Seconds()
		}
	}
	return r, true
}

// routeMeter counts a split's calls; shared by the split's copies.
type routeMeter struct {
	c [2][3]struct{ calls, positions, nanos atomic.Int64 }
}

// The kinds of call a routeMeter counts.
const (
	kindMatMul = iota
	kindExperts
	kindAttention
)

// time returns a func that records one call of kind over n positions on
// the GPU side (gpu) or the CPU's, begun now.
func (m *routeMeter) time(gpu bool, kind, n int) func() { return m.timeCalls(gpu, kind, 1, n) }

// timeCalls is time for calls calls made as one (a group of experts in one
// submission), n positions in all.
func (m *routeMeter) timeCalls(gpu bool, kind, calls, n int) func() {
	if m == nil {
		return func() {}
	}
	side := 1
	if gpu {
		side = 0
	}
	start := time.Now()
	return func() {
		c := &m.c[side][kind]
		c.calls.Add(int64(calls))
		c.positions.Add(int64(n))
		c.nanos.Add(int64(time.Since(start)))
	}
}

func (m *routeMeter) snapshot() RouteStats {
	side := func(i int) RouteSide {
		c := func(k int) RouteCount {
			c := &m.c[i][k]
			return RouteCount{c.calls.Load(), c.positions.Load(), time.Duration(c.nanos.Load()).Seconds()}
		}
		return RouteSide{c(kindMatMul), c(kindExperts), c(kindAttention)}
	}
	return RouteStats{GPU: side(0), CPU: side(1)}
}
