package conformance

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/kernels"
)

// The tolerances are tight enough that one wrong weight (a flipped nibble,
// byte or bit of a scale) is caught: the conformance tests can fail.
func TestToleranceCatchesOneWrongWeight(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, dt := range []kernels.DType{kernels.F32, kernels.BF16, kernels.F16, kernels.I8, kernels.MXFP4} {
		for _, cols := range []int{64, 3584} {
			t.Run(fmt.Sprintf("%s/%d", dt, cols), func(t *testing.T) {
				w := RandMatrix(rng, dt, 8, cols)
				require.NoError(t, w.Validate())
				x := RandVec(rng, cols)
				want := make([]float32, 8)
				kernels.Ref().MatVec(want, w, x)
				require.Equal(t, -1, Worst(want, want, MatMulTol(w, x, 1)))

				bad := w
				bad.Data = append([]byte(nil), w.Data...)
				// The top bits of the largest-magnitude element of row 5.
				row := make([]float32, cols)
				kernels.DecodeRow(row, w, 5)
				best := 0
				for c := range row {
					if abs(row[c]*x[c]) > abs(row[best]*x[best]) {
						best = c
					}
				}
				size := len(w.Data) / (8 * cols)
				switch dt {
				case kernels.MXFP4:
					i := (5*cols + best) / 2
					bad.Data[i] ^= 0x44 // flips the 2^1 bit of both nibbles' e2m1 exponent
				default:
					bad.Data[(5*cols+best)*size+size-1] ^= 0x80 // the sign
				}
				got := make([]float32, 8)
				kernels.Ref().MatVec(got, bad, x)
				require.Equal(t, 5, Worst(want, got, MatMulTol(w, x, 1)))
			})
		}
	}
}

func abs(v float32) float32 { return max(v, -v) }
