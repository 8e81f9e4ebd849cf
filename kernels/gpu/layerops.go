package gpu

import (
	"fmt"

	"github.com/deltafin/deltafin/kernels"
	"github.com/deltafin/deltafin/kernels/shaders"
)

// RMSNormRows runs kernels.LayerOps.RMSNormRows on the device.
func (b *Backend) RMSNormRows(dst, x, w []float32, eps float32, width int) {
	if width <= 0 || len(x)%width != 0 || len(dst) < len(x) || (w != nil && len(w) < width) {
		panic(fmt.Sprintf("gpu: RMSNormRows: x %d, dst %d, w %d, width %d", len(x), len(dst), len(w), width))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.rmsNorm(dst, x, w, eps, width); err != nil {
		b.fail(err)
		kernels.RefLayerOps().RMSNormRows(dst, x, w, eps, width)
	}
}

func (b *Backend) rmsNorm(dst, x, w []float32, eps float32, width int) error {
	rows := len(x) / width
	hasW := uint32(0)
	if w != nil {
		hasW = 1
	}
	if err := b.puts(map[int][]float32{slotA: x, slotB: w[:min(len(w), width)]}); err != nil {
		return err
	}
	if _, err := b.slot(slotC, 4*len(x)); err != nil {
		return err
	}
	gx, _ := b.grid(rows)
	if err := b.run(shaders.RMSNorm, []int{slotA, slotB, slotC}, []uint32{uint32(width), uint32(rows), f32bits(eps), hasW}, gx, 1); err != nil {
		return err
	}
	return b.getF32(slotC, dst[:len(x)])
}

// KDARecurrent runs kernels.LayerOps.KDARecurrent on the device.
func (b *Backend) KDARecurrent(o, q, k, v, g, beta, s []float32, T, nh, d int) {
	n := T * nh * d
	if T < 1 || nh < 1 || d < 1 || len(q) < n || len(k) < n || len(v) < n || len(g) < n || len(o) < n ||
		len(beta) < T*nh || len(s) < nh*d*d {
		panic(fmt.Sprintf("gpu: KDARecurrent T %d nh %d d %d: slices too short", T, nh, d))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.kda(o, q, k, v, g, beta, s, T, nh, d); err != nil {
		b.fail(err)
		kernels.RefLayerOps().KDARecurrent(o, q, k, v, g, beta, s, T, nh, d)
	}
}

func (b *Backend) kda(o, q, k, v, g, beta, s []float32, T, nh, d int) error {
	n := T * nh * d
	if nh > b.groups() {
		return fmt.Errorf("%w: %d heads exceed the dispatch limit", ErrLimit, nh)
	}
	if err := b.puts(map[int][]float32{
		slotW1: q[:n], slotS1: k[:n], slotW3: v[:n], slotS3: g[:n], slotW2: beta[:T*nh], slotS2: s[:nh*d*d],
	}); err != nil {
		return err
	}
	if _, err := b.slot(slotY, 4*n); err != nil {
		return err
	}
	slots := []int{slotW1, slotS1, slotW3, slotS3, slotW2, slotS2, slotY}
	if err := b.run(shaders.KDA, slots, []uint32{uint32(T), uint32(nh), uint32(d)}, nh, 1); err != nil {
		return err
	}
	if err := b.getF32(slotS2, s[:nh*d*d]); err != nil {
		return err
	}
	return b.getF32(slotY, o[:n])
}

// Attention runs kernels.LayerOps.Attention on the device.
func (b *Backend) Attention(o, q, kc, vc []float32, T, nh, qk, dv, past int, scale float32) {
	L := past + T
	if T < 1 || nh < 1 || qk < 1 || dv < 1 || past < 0 || len(q) < T*nh*qk || len(kc) < L*nh*qk ||
		len(vc) < L*nh*dv || len(o) < T*nh*dv {
		panic(fmt.Sprintf("gpu: Attention T %d nh %d qk %d dv %d past %d: slices too short", T, nh, qk, dv, past))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.attention(o, q, kc, vc, T, nh, qk, dv, past, scale); err != nil {
		b.fail(err)
		kernels.RefLayerOps().Attention(o, q, kc, vc, T, nh, qk, dv, past, scale)
	}
}

func (b *Backend) attention(o, q, kc, vc []float32, T, nh, qk, dv, past int, scale float32) error {
	L := past + T
	if nh > b.groups() || T > b.groups() || 4*T*nh*L > b.maxBuf() || 4*L*nh*qk > b.maxBuf() {
		return fmt.Errorf("%w: attention of %d tokens over %d positions exceeds the device limits", ErrLimit, T, L)
	}
	if err := b.puts(map[int][]float32{slotA: q[:T*nh*qk], slotB: kc[:L*nh*qk], slotC: vc[:L*nh*dv]}); err != nil {
		return err
	}
	if _, err := b.slot(slotD, 4*T*nh*L); err != nil {
		return err
	}
	if _, err := b.slot(slotY, 4*T*nh*dv); err != nil {
		return err
	}
	push := []uint32{uint32(T), uint32(nh), uint32(qk), uint32(dv), uint32(past), f32bits(scale)}
	if err := b.run(shaders.Attn, []int{slotA, slotB, slotC, slotD, slotY}, push, nh, T); err != nil {
		return err
	}
	return b.getF32(slotY, o[:T*nh*dv])
}

// puts copies each vector into its slot.
func (b *Backend) puts(m map[int][]float32) error {
	for slot, v := range m {
		if err := b.putF32(slot, v); err != nil {
			return err
		}
	}
	return nil
}

// run is one submission of one dispatch.
func (b *Backend) run(shader string, slots []int, push []uint32, gx, gy int) error {
	if err := b.begin(); err != nil {
		return err
	}
	if err := b.dispatch(shader, slots, push, gx, gy, 1); err != nil {
		return err
	}
	return b.submit()
}
