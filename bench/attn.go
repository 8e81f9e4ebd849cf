package bench

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/deltafin/deltafin/kernels"
)

// attnCase is one layer's prefill attention (kernels.Attention) over T new
// positions with no cache before them: K3's MLA layer, 96 heads of 192
// query/key and 128 value columns (the work per head is the same at any
// count, but a GPU fills with heads: at 256 positions 16 of them made 64
// workgroups for 132 multiprocessors). Its operations are 2·(qk+dv) per
// visible (query, key) pair and head, T(T+1)/2 pairs; its bytes are q, k,
// v and the output once.
type attnCase struct {
	name         string
	flops, bytes int
	a            kernels.Attn
}

func attnCases(shrink int) []attnCase {
	const heads, qk, dv = 96, 192, 128
	var out []attnCase
	for _, T := range []int{256, 1024, 4096} {
		T = max(T/shrink, 1)
		a := kernels.Attn{
			Dst: make([]float32, T*heads*dv), Q: benchVec(T * heads * qk), K: benchVec(T * heads * qk), V: benchVec(T * heads * dv),
			T: T, Heads: heads, QK: qk, DV: dv, Scale: float32(1 / math.Sqrt(qk)),
		}
		out = append(out, attnCase{
			name:  fmt.Sprintf("attention_%dx%dx%d_t%d", heads, qk, dv, T),
			flops: T * (T + 1) / 2 * heads * 2 * (qk + dv),
			bytes: 4 * T * heads * (2*qk + 2*dv),
			a:     a,
		})
	}
	return out
}

// benchAttn measures each case on b: one untimed call, then the best of
// at least two calls and minTime.
func benchAttn(ctx context.Context, b kernels.Backend, c attnCase, minTime time.Duration) (KernelResult, error) {
	if err := kernels.Attention(ctx, b, c.a); err != nil {
		return KernelResult{}, err
	}
	best := time.Duration(math.MaxInt64)
	clock, dev := backendClock(b), deviceBest{}
	start := time.Now()
	for i := 0; i < 2 || time.Since(start) < minTime; i++ {
		clock.start()
		t := time.Now()
		if err := kernels.Attention(ctx, b, c.a); err != nil {
			return KernelResult{}, err
		}
		took := time.Since(t)
		best = min(best, took)
		dev.add(clock, took)
	}
	r := KernelResult{Name: c.name, Threads: kernels.Threads(b), GBps: float64(c.bytes) / best.Seconds() / 1e9,
		GFLOPS: float64(c.flops) / best.Seconds() / 1e9}
	dev.fill(&r, c.flops)
	return r, nil
}
