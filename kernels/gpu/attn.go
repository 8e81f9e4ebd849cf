package gpu

import (
	"context"
	"errors"
	"fmt"

	"github.com/deltafin/deltafin/kernels"
	"github.com/deltafin/deltafin/kernels/shaders"
)

// AttnMaxHead is the widest query/key or value head the device takes;
// wider heads run on the CPU. attn.comp itself has no bound: it streams
// the query/key columns in chunks and takes dv in slices of attnCols, one
// workgroup each (a slice recomputes the scores, so wide value heads cost
// more); the bound is the widest head tested.
const AttnMaxHead = 256

// attnRowsPerSubmit bounds one submission of attention to this many query
// rows, so that a cancelled prefill returns after at most one such
// submission rather than after the whole layer.
const attnRowsPerSubmit = 1024

// attnRows is the query rows of one workgroup of attn.comp (BQ there),
// attnCols its output columns (DS there).
const (
	attnRows = 64
	attnCols = 128
)

// Attention runs the causal attention of a on the device (attn.comp): q, k
// and v are copied into slots, the rows are dispatched 64 per workgroup,
// head and slice of 128 output columns, attnRowsPerSubmit rows per
// submission with ctx checked between them. What the device cannot take
// (a head wider than AttnMaxHead, a buffer over its limit, a device error)
// runs on the fallback, and Err says why.
func (b *Backend) Attention(ctx context.Context, a kernels.Attn) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	err := b.attention(ctx, a)
	if err == nil || ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return err
	}
	b.fail(err)
	return kernels.Attention(ctx, b.fallback, a)
}

func (b *Backend) attention(ctx context.Context, a kernels.Attn) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if a.T == 0 {
		return nil
	}
	if err := b.attnLimits(a); err != nil {
		return err
	}
	n, db := a.Past+a.T, 4*a.T*a.Heads*a.DV
	for _, s := range []struct {
		slot int
		v    []float32
	}{{slotX, a.Q[:a.T*a.Heads*a.QK]}, {slotG, a.K[:n*a.Heads*a.QK]}, {slotU, a.V[:n*a.Heads*a.DV]}} {
		if err := b.putF32(s.slot, s.v); err != nil {
			return err
		}
	}
	if _, err := b.slot(slotY, db); err != nil {
		return err
	}
	if err := b.runAttn(ctx, a, [4]int{slotX, slotG, slotU, slotY}, false, [][2]int{{slotY, db}}); err != nil {
		return err
	}
	return b.getF32(slotY, a.Dst[:a.T*a.Heads*a.DV])
}

// attnLimits says why the device cannot take a (ErrLimit), nil when it can.
func (b *Backend) attnLimits(a kernels.Attn) error {
	n := a.Past + a.T
	if a.QK > AttnMaxHead || a.DV > AttnMaxHead {
		return fmt.Errorf("%w: attention heads of %d and %d exceed %d", ErrLimit, a.QK, a.DV, AttnMaxHead)
	}
	qb, kb, vb, db := 4*a.T*a.Heads*a.QK, 4*n*a.Heads*a.QK, 4*n*a.Heads*a.DV, 4*a.T*a.Heads*a.DV
	if max(qb, kb, vb, db) > b.maxBuf() {
		return fmt.Errorf("%w: attention over %d positions exceeds a %d-byte buffer", ErrLimit, n, b.maxBuf())
	}
	if a.Heads > b.dev.MaxGroups() {
		return fmt.Errorf("%w: %d heads exceed %d workgroups", ErrLimit, a.Heads, b.dev.MaxGroups())
	}
	return nil
}

// runAttn dispatches a's rows over the slots of q, k, v and dst, whose
// inputs are on the device by the first call: attnRowsPerSubmit rows a
// call, ctx checked before each call but a first one already begun, the
// last ending with the copies back of backs (slot, bytes).
func (b *Backend) runAttn(ctx context.Context, a kernels.Attn, slots [4]int, begun bool, backs [][2]int) error {
	slices := (a.DV + attnCols - 1) / attnCols
	for r0 := 0; r0 < a.T; r0 += attnRowsPerSubmit {
		if !begun {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := b.begin(); err != nil {
				return err
			}
		}
		begun = false
		rows := min(attnRowsPerSubmit, a.T-r0)
		push := []uint32{uint32(a.T), uint32(a.Past), uint32(a.Heads), uint32(a.QK), uint32(a.DV), f32bits(a.Scale), uint32(r0)}
		if err := b.dispatch(shaders.Attn, slots[:], push, (rows+attnRows-1)/attnRows*slices, a.Heads, 1); err != nil {
			return err
		}
		if r0+rows == a.T {
			for _, bk := range backs {
				if err := b.dev.ToHost(bk[0], bk[1]); err != nil {
					return err
				}
			}
		}
		if err := b.submit(); err != nil {
			return err
		}
	}
	return nil
}
