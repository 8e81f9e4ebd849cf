package gpu

import (
	"fmt"

	"github.com/deltafin/deltafin/kernels"
	"github.com/deltafin/deltafin/kernels/shaders"
)

var _ kernels.DevicePeaker = (*Backend)(nil)

// DeviceFMAPeak runs fma.comp once over groups workgroups of 64 threads,
// steps (a multiple of 4) multiply-add steps on each of a thread's 32 lanes: 2·32·steps·64·
// groups operations, returned with the sum of every thread's lanes and
// the sum the arithmetic gives (a = b = 1: 496 + 32·steps a thread, exact
// while steps + 32 ≤ 2^24).
func (b *Backend) DeviceFMAPeak(groups, steps int) (flops uint64, sum, want float64, err error) {
	if groups < 1 || steps < 4 || steps%4 != 0 || steps > 1<<23 {
		return 0, 0, 0, fmt.Errorf("%w: FMA peak of %d groups × %d steps", ErrLimit, groups, steps)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	threads := groups * shaders.LocalSize
	if 4*threads > b.maxBuf() {
		return 0, 0, 0, fmt.Errorf("%w: FMA peak of %d threads", ErrLimit, threads)
	}
	if _, err := b.slot(slotY, 4*threads); err != nil {
		return 0, 0, 0, err
	}
	if err := b.begin(); err != nil {
		return 0, 0, 0, err
	}
	gx, gy := b.grid(groups)
	if gx*gy != groups {
		gx, gy = groups, 1 // every thread writes one sum: no partial rows of groups
		if groups > b.dev.MaxGroups() {
			return 0, 0, 0, fmt.Errorf("%w: %d workgroups", ErrLimit, groups)
		}
	}
	if err := b.dispatch(shaders.FMA, []int{slotY}, []uint32{uint32(steps), f32bits(1), f32bits(1)}, gx, gy, 1); err != nil {
		return 0, 0, 0, err
	}
	if err := b.submitTo(slotY, 4*threads); err != nil {
		return 0, 0, 0, err
	}
	out := make([]float32, threads)
	if err := b.getF32(slotY, out); err != nil {
		return 0, 0, 0, err
	}
	for _, v := range out {
		sum += float64(v)
	}
	return 2 * 32 * uint64(steps) * uint64(threads), sum, float64(threads) * (496 + 32*float64(steps)), nil
}
