package gpu

import (
	"context"
	"errors"

	"github.com/deltafin/deltafin/kernels"
	"github.com/deltafin/deltafin/kernels/shaders"
)

// Latent attention on the device (kernels.LatentAttention): the latents
// cross the bus, the queries, keys and values are made where the attention
// reads them, and only kv_b's outputs (for the host's cache) and the
// attention's come back. Step by step, each product's outputs came back
// and the attention's q, k and v went out again: at 256 positions of K3's
// 96 heads, 109 MB across the bus against 40 MB (2.7 in, 37.7 back).
//
// Its slots: the queries' latents in slotX (the products' input), the
// keys' latents and RoPE columns in latIn and latKPE, the queries and
// kv_b's outputs in latQ and latKV (slots no other call keeps anything in
// between calls), the keys, values and outputs where Attention has them.
const (
	latIn, latKPE, latQ, latKV = 11, 12, 13, 14
)

// LatentAttention runs a on the device as one piece of work when both of
// its products are kept there (each a Key, one block, within the resident
// budget together) and the device takes its attention; otherwise, and
// after a device error (which Err then reports), it runs the steps
// (kernels.LatentSteps), each where MatMul and Attention put it. The bits
// are the steps' on this device: the same shaders over the same inputs.
func (b *Backend) LatentAttention(ctx context.Context, a kernels.LatentAttn) error {
	b.mu.Lock()
	took, err := b.latent(ctx, a)
	cancelled := err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err())
	if took && err != nil && !cancelled {
		b.fail(err)
	}
	b.mu.Unlock()
	if took && (err == nil || cancelled) {
		return err
	}
	return kernels.LatentSteps(ctx, b, a)
}

// LatentCalls is how many latent attention calls ran on the device as one
// piece of work.
func (b *Backend) LatentCalls() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.latents
}

// latent runs a on the device; took is false, with nothing done, where it
// does not take a as one piece of work.
func (b *Backend) latent(ctx context.Context, a kernels.LatentAttn) (took bool, err error) {
	if a.T < 2 || ctx.Err() != nil {
		return false, nil
	}
	nh, qk, dv := a.Heads, a.QK(), a.DV
	n := a.Past + a.T
	ws := []kernels.Matrix{a.WKV}
	if a.WQ.Rows > 0 {
		ws = append(ws, a.WQ)
	}
	var need int64
	for _, w := range ws {
		if w.Key == 0 || !b.fits(w, a.T) || b.rowBlock(w) < w.Rows {
			return false, nil
		}
		need += int64(len(w.Data) + len(w.Scales))
	}
	kpe := a.KPE[:(a.T-1)*a.KPEStride+a.KPEOff+a.RoPE]
	if need > b.resBudget() || b.attnLimits(a.Attn(nil)) != nil || 4*len(kpe) > b.maxBuf() {
		return false, nil
	}

	// Both products' weights on the device before the first dispatch is
	// recorded: a block copied in later could evict one it binds.
	kvD, kvS, err := b.weights(a.WKV, 0, a.WKV.Rows, slotW3, slotS3)
	if err != nil {
		return true, err
	}
	qD, qS := 0, 0
	if a.WQ.Rows > 0 {
		if qD, qS, err = b.weights(a.WQ, 0, a.WQ.Rows, slotW1, slotS1); err != nil {
			return true, err
		}
	}
	// Every slot at its size before any is written: a slot that grows
	// loses what it held.
	qb, kvb, db := 4*a.T*nh*qk, 4*a.T*a.WKV.Rows, 4*a.T*nh*dv
	for _, s := range [][2]int{{slotG, 4 * n * nh * qk}, {slotU, 4 * n * nh * dv}, {slotY, db}, {latQ, qb}, {latKV, kvb}} {
		if _, err := b.slot(s[0], s[1]); err != nil {
			return true, err
		}
	}
	type put struct {
		slot int
		v    []float32
	}
	puts := []put{{slotG, a.K[:a.Past*nh*qk]}, {slotU, a.V[:a.Past*nh*dv]}, {latIn, a.Lat[:a.T*a.WKV.Cols]}, {latKPE, kpe}}
	if a.WQ.Rows > 0 {
		puts = append(puts, put{slotX, a.QIn[:a.T*a.WQ.Cols]})
	} else {
		puts = append(puts, put{latQ, a.QIn[:a.T*nh*qk]})
	}
	for _, p := range puts {
		if err := b.putF32(p.slot, p.v); err != nil {
			return true, err
		}
	}

	if err := b.begin(); err != nil {
		return true, err
	}
	// Each product in the shader its own call would take (matGrid over
	// all T positions), so its bits are MatMul's.
	if a.WQ.Rows > 0 {
		shader, gx, gy := b.matGrid(a.WQ.Rows, a.T)
		if err := b.dispatch(shader, []int{qD, qS, slotX, latQ}, matPush(a.WQ, a.WQ.Rows, a.T, a.WQ.Rows, 0), gx, gy, 1); err != nil {
			return true, err
		}
	}
	shader, gx, gy := b.matGrid(a.WKV.Rows, a.T)
	if err := b.dispatch(shader, []int{kvD, kvS, latIn, latKV}, matPush(a.WKV, a.WKV.Rows, a.T, a.WKV.Rows, 0), gx, gy, 1); err != nil {
		return true, err
	}
	gx, gy = b.grid((a.T*nh*(qk+dv) + shaders.LocalSize - 1) / shaders.LocalSize)
	push := []uint32{uint32(a.T), uint32(a.Past), uint32(nh), uint32(a.NoPE), uint32(a.RoPE), uint32(dv), uint32(a.KPEStride), uint32(a.KPEOff)}
	if err := b.dispatch(shaders.MLAKV, []int{latKV, latKPE, slotG, slotU}, push, gx, gy, 1); err != nil {
		return true, err
	}
	if err := b.runAttn(ctx, a.Attn(nil), [4]int{latQ, slotG, slotU, slotY}, true, [][2]int{{slotY, db}, {latKV, kvb}}); err != nil {
		return true, err
	}
	if err := b.getF32(slotY, a.Dst[:a.T*nh*dv]); err != nil {
		return true, err
	}
	if err := b.getF32(latKV, a.KV[:a.T*a.WKV.Rows]); err != nil {
		return true, err
	}
	a.FillKV()
	b.latents++
	return true, nil
}
