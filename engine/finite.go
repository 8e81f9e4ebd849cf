package engine

import (
	"encoding/binary"
	"fmt"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/kernels"
)

// errNotFinite is ckpt.ErrNotFinite in a spine tensor: a weight is NaN or
// infinite, which a published checkpoint never holds (the bytes are damaged,
// on disk or in transit). The expert store checks the experts' scales
// (experts.CheckScales).
var errNotFinite = fmt.Errorf("%w: %w", ErrCheckpoint, ckpt.ErrNotFinite)

// firstNonFinite returns the index of the first NaN or Inf element of m's
// float data, or -1. An element is one when its exponent bits are all set:
// one mask-and-compare per element, so a scan costs far less than the read
// that brought the bytes in.
func firstNonFinite(m kernels.Matrix) int {
	b := m.Data
	switch m.DType {
	case kernels.BF16:
		// Four elements per step: a lane whose exponent bits are all set
		// becomes zero after the mask and the xor, and the classic has-zero
		// test finds it (every lane's top bit is clear after the mask).
		const mask, ones, tops = 0x7f807f807f807f80, 0x0001000100010001, 0x8000800080008000
		i := 0
		for ; i+8 <= len(b); i += 8 {
			v := binary.LittleEndian.Uint64(b[i:])&mask ^ mask
			if (v-ones)&^v&tops != 0 {
				break // the element loop below finds which
			}
		}
		for ; i+1 < len(b); i += 2 {
			if binary.LittleEndian.Uint16(b[i:])&0x7f80 == 0x7f80 {
				return i / 2
			}
		}
	case kernels.F16:
		for i := 0; i+1 < len(b); i += 2 {
			if binary.LittleEndian.Uint16(b[i:])&0x7c00 == 0x7c00 {
				return i / 2
			}
		}
	case kernels.F32:
		for i := 0; i+3 < len(b); i += 4 {
			if binary.LittleEndian.Uint32(b[i:])&0x7f800000 == 0x7f800000 {
				return i / 4
			}
		}
	}
	return -1
}

// checkFinite refuses a float tensor holding NaN or Inf, naming it.
func checkFinite(r *tensorRef, m kernels.Matrix) error {
	if i := firstNonFinite(m); i >= 0 {
		return nonFiniteError(r, i, m.Cols)
	}
	return nil
}

// nonFiniteError names element i of a tensor of cols columns.
func nonFiniteError(r *tensorRef, i, cols int) error {
	return fmt.Errorf("%w: %s: tensor %q: element %d (row %d) is NaN or Inf; the file is damaged: `deltafin setup --repair` re-verifies the install",
		errNotFinite, r.shard.name, r.full, i, i/max(cols, 1))
}
