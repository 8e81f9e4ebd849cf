package bench

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/deltafin/deltafin/kernels"
)

// attnCase is one layer's prefill attention over T new positions with no
// cache before them: K3's MLA layer, 96 heads of 192 query/key (128 + 64
// RoPE-width) and 128 value columns (the work per head is the same at any
// count, but a GPU fills with heads: at 256 positions 16 of them made 64
// workgroups for 132 multiprocessors). Its operations are 2·(qk+dv) per
// visible (query, key) pair and head, T(T+1)/2 pairs.
//
// Three kinds: the attention alone (kernels.Attention: q, k, v in and the
// outputs back, its bytes); the latent attention (kernels.LatentAttention:
// q_b and kv_b, BF16 and kept on a GPU, over K3's 1,536- and 512-wide
// latents, the new keys and values, the attention; its bytes the latents
// in, kv_b's outputs and the attention's back), and the same as its steps
// one by one (kernels.LatentSteps), for the difference the device's
// keeping the activations makes.
type attnCase struct {
	name         string
	positions    int
	flops, bytes int
	// run makes one call; its first makes the case's inputs and weights
	// (and a GPU's copies of them), so benchAttn times the calls after it.
	run func(ctx context.Context, b kernels.Backend) error
}

const (
	attnHeads, attnNoPE, attnRoPE, attnDV = 96, 128, 64, 128
	latentQ, latentKV                     = 1536, 512 // K3's q_lora_rank, kv_lora_rank
)

func attnCases(shrink int) []attnCase {
	const heads, qk, dv = attnHeads, attnNoPE + attnRoPE, attnDV
	var out []attnCase
	for _, T := range []int{256, 1024, 4096} {
		T = max(T/shrink, 1)
		a := kernels.Attn{
			Dst: make([]float32, T*heads*dv), Q: benchVec(T * heads * qk), K: benchVec(T * heads * qk), V: benchVec(T * heads * dv),
			T: T, Heads: heads, QK: qk, DV: dv, Scale: float32(1 / math.Sqrt(qk)),
		}
		run := func(ctx context.Context, b kernels.Backend) error { return kernels.Attention(ctx, b, a) }
		out = append(out, attnCase{
			name:      fmt.Sprintf("attention_%dx%dx%d_t%d", heads, qk, dv, T),
			positions: T,
			flops:     attnFlops(T),
			bytes:     4 * T * heads * (2*qk + 2*dv),
			run:       run,
		})
	}
	for _, T := range []int{256, 1024, 4096} {
		T = max(T/shrink, 1)
		out = append(out, latentCases(T)...)
	}
	return out
}

func attnFlops(T int) int { return T * (T + 1) / 2 * attnHeads * 2 * (attnNoPE + attnRoPE + attnDV) }

// latentCases is the latent attention over T positions, whole and as its
// steps, over the same weights and inputs.
func latentCases(T int) []attnCase {
	qk := attnNoPE + attnRoPE
	rowsQ, rowsKV := attnHeads*qk, attnHeads*(attnNoPE+attnDV)
	// Made by the first call of either: gigabytes at 4,096 positions,
	// which a run that leaves the case out never allocates.
	var a *kernels.LatentAttn
	inputs := func() kernels.LatentAttn {
		if a == nil {
			wkv := benchMatrix(kernels.BF16, rowsKV, latentKV)
			a = &kernels.LatentAttn{
				Dst: make([]float32, T*attnHeads*attnDV), QIn: benchVec(T * latentQ), WQ: benchMatrix(kernels.BF16, rowsQ, latentQ),
				Lat: benchVec(T * latentKV), WKV: wkv, KPE: benchVec(T * (latentKV + attnRoPE)), KPEStride: latentKV + attnRoPE, KPEOff: latentKV,
				K: make([]float32, T*attnHeads*qk), V: make([]float32, T*attnHeads*attnDV), KV: make([]float32, T*rowsKV),
				T: T, Heads: attnHeads, NoPE: attnNoPE, RoPE: attnRoPE, DV: attnDV, Scale: float32(1 / math.Sqrt(float64(qk))),
			}
		}
		return *a
	}
	flops := attnFlops(T) + 2*T*(rowsQ*latentQ+rowsKV*latentKV)
	bytes := 4 * T * (latentQ + latentKV + attnRoPE + rowsKV + attnHeads*attnDV)
	whole := func(ctx context.Context, b kernels.Backend) error { return kernels.LatentAttention(ctx, b, inputs()) }
	steps := func(ctx context.Context, b kernels.Backend) error { return kernels.LatentSteps(ctx, b, inputs()) }
	name := fmt.Sprintf("%dx(%d+%d)x%d_q%d_r%d_t%d", attnHeads, attnNoPE, attnRoPE, attnDV, latentQ, latentKV, T)
	return []attnCase{
		{name: "latent_attention_" + name, positions: T, flops: flops, bytes: bytes, run: whole},
		{name: "latent_steps_" + name, positions: T, flops: flops, bytes: bytes, run: steps},
	}
}

// benchMatrix is a keyed matrix of rows × cols of dt whose elements decode
// to modest normal values (the kernels' cases' bytes).
func benchMatrix(dt kernels.DType, rows, cols int) kernels.Matrix {
	data, scales := matBytes(dt, rows, cols)
	buf := make([]byte, data+scales)
	for i := range buf {
		buf[i] = 0x3c + byte(i%6)
	}
	m, _ := matAt(buf, dt, rows, cols, 0)
	fillScales(m)
	m.Key = kernels.NewKey()
	return m
}

// benchAttn measures each case on b: one untimed call, then the best of
// at least two calls and minTime.
func benchAttn(ctx context.Context, b kernels.Backend, c attnCase, minTime time.Duration) (KernelResult, error) {
	if err := c.run(ctx, b); err != nil {
		return KernelResult{}, err
	}
	best := time.Duration(math.MaxInt64)
	clock, dev := backendClock(b), deviceBest{}
	start := time.Now()
	for i := 0; i < 2 || time.Since(start) < minTime; i++ {
		clock.start()
		t := time.Now()
		if err := c.run(ctx, b); err != nil {
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
