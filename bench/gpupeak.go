package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/deltafin/deltafin/kernels"
)

// ErrGPUPeak is GPUPeak's error when the device's arithmetic does not give
// the sum it must (the peak shader's work was not done as written).
var ErrGPUPeak = errors.New("bench: the GPU's FMA peak gave a wrong sum")

// gpuPeakGroups is the peak shader's workgroups (of 64 threads): 524,288
// threads, enough to fill every multiprocessor of a large GPU several
// times over.
const gpuPeakGroups = 8192

// GPUPeak measures a device's fp32 multiply-add rate (kernels.DevicePeaker:
// independent FMA chains in a shader), for at least minTime and two
// passes, after growing the steps until one pass takes 20 ms or more (so
// the submission's fixed cost is small beside it, and the GPU's clock has
// left idle), and returns the best pass in GFLOP/s: the compute limit of
// that GPU's products, as FMAPeak is the CPU's. Where the device times
// its own shaders (kernels.DeviceTimer) the pass's time is the shader's
// by the device's clock when that is the faster rate, so that the
// kernels' device-timed rates (KernelResult.DeviceGFLOPS) are held to a
// peak timed the same way.
func GPUPeak(ctx context.Context, p kernels.DevicePeaker, minTime time.Duration) (float64, error) {
	run := func(steps int) (uint64, error) {
		flops, sum, want, err := p.DeviceFMAPeak(gpuPeakGroups, steps)
		if err != nil {
			return 0, err
		}
		if sum != want {
			return 0, fmt.Errorf("%w: %g, not %g", ErrGPUPeak, sum, want)
		}
		return flops, nil
	}
	steps := 16
	flops, err := run(steps)
	for err == nil && steps < 1<<18 {
		t := time.Now()
		if flops, err = run(steps); err != nil || time.Since(t) >= 20*time.Millisecond {
			break
		}
		steps *= 2
	}
	if err != nil {
		return 0, err
	}
	t, _ := p.(kernels.DeviceTimer)
	clock := newDeviceClock(t)
	bestShader := time.Duration(math.MaxInt64)
	wall, merr := measure(ctx, minTime, 2, int(flops), func() {
		if err == nil {
			clock.start()
			_, err = run(steps)
			if sh, _, ok := clock.since(); ok && sh > 0 {
				bestShader = min(bestShader, sh)
			}
		}
	})
	if merr != nil {
		return 0, merr
	}
	if err != nil {
		return 0, err
	}
	if bestShader < math.MaxInt64 {
		return max(wall, float64(flops)/bestShader.Seconds()/1e9), nil
	}
	return wall, nil
}

// deviceClock reads a GPU's own time (kernels.DeviceTimer) around a
// measurement: start, then since gives the device's time in shaders and
// in copies since it; ok false where there is no such clock.
type deviceClock struct {
	t               kernels.DeviceTimer
	shaders, copies time.Duration
}

// newDeviceClock reads t (none where t is nil or keeps no time).
func newDeviceClock(t kernels.DeviceTimer) *deviceClock {
	if t == nil {
		return &deviceClock{}
	}
	if _, _, ok := t.DeviceTimes(); !ok {
		return &deviceClock{}
	}
	return &deviceClock{t: t}
}

// backendClock is the clock of b's device (its GPU side, for a split).
func backendClock(b kernels.Backend) *deviceClock {
	t, _ := kernels.DeviceTimerOf(b)
	return newDeviceClock(t)
}

func (c *deviceClock) start() {
	if c.t != nil {
		c.shaders, c.copies, _ = c.t.DeviceTimes()
	}
}

func (c *deviceClock) since() (shaders, copies time.Duration, ok bool) {
	if c.t == nil {
		return 0, 0, false
	}
	s, cp, _ := c.t.DeviceTimes()
	return s - c.shaders, cp - c.copies, true
}

// gpuPeaker is the device peaker behind a backend name: the backend's own
// (a GPU backend, or the GPU of "gpu" and "auto"), else that of the GPU
// backend a composite name such as "vulkan+avx512" (engine.Info.Backend)
// starts with; false when there is none.
func gpuPeaker(name string) (kernels.DevicePeaker, bool) {
	if b, err := kernels.ByName(name); err == nil {
		if p, ok := kernels.DevicePeakerOf(b); ok {
			return p, true
		}
	}
	first, _, _ := strings.Cut(name, "+")
	if first == name || !slices.Contains(kernels.Registered(), first) {
		return nil, false
	}
	b, err := kernels.ByName(first)
	if err != nil {
		return nil, false
	}
	return kernels.DevicePeakerOf(b)
}
