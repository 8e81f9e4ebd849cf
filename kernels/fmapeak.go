package kernels

import (
	"sync"
	"time"
)

// FMAPeak runs n steps of v = v·1 + 1 on every fp32 lane of the best
// instruction set's FMA loop (independent chains, enough to keep every FMA
// unit busy) in each of threads goroutines, as fast as this CPU multiplies
// and adds: C with the widest FMA of the best instruction set when built
// with cgo, plain Go otherwise. It is the compute limit `deltafin bench
// kernels` holds the matmuls to, kept here beside the kernels' C code so
// that both are built alike. It returns the floating-point operations done
// (2 per lane step) and the sum of every lane at the end, lane j of a
// thread starting at j: lanes·(lanes-1)/2 + lanes·n per thread, exact while
// n + lanes ≤ 2^24, which keeps the arithmetic from being optimised away
// and proves it was done.
func FMAPeak(threads, n int) (flops uint64, sum float64) {
	threads = max(threads, 1)
	n = max(n, 0)
	lanes, sums := make([]int, threads), make([]float64, threads)
	var wg sync.WaitGroup
	for i := range threads {
		wg.Go(func() { lanes[i], sums[i] = fmaLoop(n, 1, 1) })
	}
	wg.Wait()
	for i := range threads {
		flops += 2 * uint64(lanes[i]) * uint64(n)
		sum += sums[i]
	}
	return flops, sum
}

// fmaGo is the FMA loop in Go: eight independent chains of v = v·a + b,
// chain j starting at j; it returns the lane count and the lanes' sum.
func fmaGo(n int, a, b float32) (int, float64) {
	v0, v1, v2, v3, v4, v5, v6, v7 := float32(0), float32(1), float32(2), float32(3), float32(4), float32(5), float32(6), float32(7)
	for range n {
		v0 = v0*a + b
		v1 = v1*a + b
		v2 = v2*a + b
		v3 = v3*a + b
		v4 = v4*a + b
		v5 = v5*a + b
		v6 = v6*a + b
		v7 = v7*a + b
	}
	return 8, float64(v0) + float64(v1) + float64(v2) + float64(v3) + float64(v4) + float64(v5) + float64(v6) + float64(v7)
}

// A DevicePeaker is a backend with an arithmetic device of its own (a GPU)
// that measures that device's fp32 multiply-add rate, the limit its
// matmuls are held to: DeviceFMAPeak runs one submission of independent
// FMA chains over groups workgroups, steps steps each, and returns the
// operations done, the sum of every lane and the sum the arithmetic must
// give (proof that it was done).
type DevicePeaker interface {
	DeviceFMAPeak(groups, steps int) (flops uint64, sum, want float64, err error)
}

// DevicePeakerOf returns b's device peaker: b itself, or the GPU side of a
// Split or Accelerate backend; false when b has no device of its own.
func DevicePeakerOf(b Backend) (DevicePeaker, bool) {
	if s, ok := b.(split); ok {
		b = s.prefill
	}
	p, ok := b.(DevicePeaker)
	return p, ok
}

// A DeviceTimer is a backend whose device times its own work (a GPU's
// timestamps): DeviceTimes is the device's time in shaders and in copies
// between host and device memory over every call so far, ok false when
// the device keeps no time. Benchmarks read it around a kernel's calls to
// tell the shaders' rate from the call's.
type DeviceTimer interface {
	DeviceTimes() (shaders, copies time.Duration, ok bool)
}

// DeviceTimerOf returns b's device timer: b itself, or the GPU side of a
// Split or Accelerate backend; false when b has none.
func DeviceTimerOf(b Backend) (DeviceTimer, bool) {
	if s, ok := b.(split); ok {
		b = s.prefill
	}
	t, ok := b.(DeviceTimer)
	return t, ok
}
