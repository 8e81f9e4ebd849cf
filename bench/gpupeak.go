package bench

import (
	"context"
	"errors"
	"fmt"
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
// left idle), and returns the best pass
// in GFLOP/s: the compute limit of that GPU's products, as FMAPeak is the
// CPU's.
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
	return measure(ctx, minTime, 2, int(flops), func() {
		if err == nil {
			_, err = run(steps)
		}
	})
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
