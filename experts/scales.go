package experts

import (
	"fmt"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/kernels"
)

// scaleNaN is the e8m0 encoding of NaN, the one byte an MXFP4 scale never is.
const scaleNaN = 0xff

// CheckScales refuses an MXFP4 expert span (ckpt.ExpertSpan's bytes, three
// equal parts of packed weights then scales: 16 packed bytes per scale
// byte) whose scales hold the NaN byte, naming the tensor
// (ckpt.ErrNotFinite). The store checks every span it reads from disk once.
func CheckScales(id ckpt.ExpertID, shard string, b []byte) error {
	part := len(b) / 3
	if part*3 != len(b) || part%17 != 0 {
		return nil // not the MXFP4 layout; View refuses it
	}
	scales := part / 17
	for k := range 3 {
		s := b[k*part+part-scales : (k+1)*part]
		for i, v := range s {
			if v == scaleNaN {
				return fmt.Errorf("%w: %s: tensor %q: scale %d is 255 (NaN in e8m0); the file is damaged: `deltafin setup --repair` re-verifies the install",
					ckpt.ErrNotFinite, shard, ckpt.ExpertName(id, 2*k+1), i)
			}
		}
	}
	return nil
}

// View views an expert span (ckpt.ExpertSpan's bytes) as the kernels' gate
// (W1, [inter, latent]), down (W2, [latent, inter]) and up (W3) MXFP4
// matrices, without a copy: the seam where the store's bytes become the
// engine's operands.
func View(b []byte, inter, latent int) (kernels.Expert, error) {
	if int64(len(b)) != ckpt.ExpertSpanSize(inter, latent) {
		return kernels.Expert{}, fmt.Errorf("%w: span of %d bytes, want %d for [%d,%d]",
			ckpt.ErrExpertLayout, len(b), ckpt.ExpertSpanSize(inter, latent), inter, latent)
	}
	n := inter * latent
	packed, scales := n/2, n/kernels.MXFP4GroupSize
	m := func(i, rows, cols int) kernels.Matrix {
		off := i * (packed + scales)
		return kernels.Matrix{DType: kernels.MXFP4, Rows: rows, Cols: cols,
			Data: b[off : off+packed : off+packed], Scales: b[off+packed : off+packed+scales : off+packed+scales]}
	}
	return kernels.Expert{W1: m(0, inter, latent), W2: m(1, latent, inter), W3: m(2, inter, latent)}, nil
}
