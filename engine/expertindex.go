package engine

import (
	"fmt"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/kernels"
)

// expertMatrices views an expert span (ckpt.ExpertSpan's bytes) as the
// kernels' gate (W1, [inter, latent]), down (W2, [latent, inter]) and up (W3)
// MXFP4 matrices, without a copy.
func expertMatrices(b []byte, inter, latent int) (kernels.Expert, error) {
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
