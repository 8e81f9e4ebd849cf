package conformance

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/deltafin/deltafin/kernels"
)

// Gemm holds kernels.MatMulF32 on every backend to kernels.GemmRef over the
// chunked delta rule's shapes (k3-tiny's and Kimi-Linear's heads of 16 and
// 32, K3's of 128, a ragged last chunk), with leading dimensions wider
// than the rows and with accumulation into C.
func Gemm(t *testing.T, bs ...kernels.Backend) {
	t.Helper()
	for i, c := range []struct {
		m, k, n, pad int
		acc          bool
	}{
		{16, 16, 16, 0, false}, {60, 16, 60, 3, true}, {64, 32, 48, 0, true}, {5, 7, 3, 2, false},
		{64, 128, 128, 0, true}, {1, 1, 1, 0, true}, {0, 4, 4, 0, false}, {3, 0, 5, 0, true},
	} {
		t.Run(fmt.Sprintf("%dx%dx%d/pad%d/acc%v", c.m, c.k, c.n, c.pad, c.acc), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(21, uint64(i)))
			g := kernels.Gemm{M: c.m, K: c.k, N: c.n, LDA: c.k + c.pad, LDB: c.n + c.pad, LDC: c.n + c.pad, Acc: c.acc}
			g.A, g.B = RandVec(rng, max(c.m*g.LDA, 1)), RandVec(rng, max(c.k*g.LDB, 1))
			c0 := RandVec(rng, max(c.m*g.LDC, 1))
			want := append([]float32(nil), c0...)
			ref := g
			ref.C = want
			kernels.GemmRef(ref)
			tol := make([]float64, len(want))
			for r := 0; r < c.m; r++ {
				for j := 0; j < c.n; j++ {
					s := math.Abs(float64(c0[r*g.LDC+j]))
					for p := 0; p < c.k; p++ {
						s += math.Abs(float64(g.A[r*g.LDA+p]) * float64(g.B[p*g.LDB+j]))
					}
					tol[r*g.LDC+j] = 2 * float64(c.k+1) * U * s
				}
			}
			for _, b := range bs {
				got := g
				got.C = append([]float32(nil), c0...)
				kernels.MatMulF32(b, got)
				RequireWithin(t, want, got.C, tol, label(b))
			}
		})
	}
}
