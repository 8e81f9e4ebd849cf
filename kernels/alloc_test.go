//go:build !race

// The race detector makes sync.Pool drop items on purpose, so this test
// only exists without it.

package kernels

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// A warm fast backend allocates nothing per call: tasks and scratch come
// from pools.
func TestFastCallsDoNotAllocate(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	w := randMatrix(rng, BF16, 257, 512)
	e := Expert{W1: randMatrix(rng, MXFP4, 96, 256), W2: randMatrix(rng, MXFP4, 256, 96), W3: randMatrix(rng, MXFP4, 96, 256)}
	act := Activation{Kind: SiTU, Beta: 4, LinearBeta: 25}
	x := randVec(rng, 64*512)
	dst := make([]float32, 64*257)
	for _, b := range fastBackends(t, runtime.NumCPU()+1) {
		allocs := testing.AllocsPerRun(200, func() {
			b.MatVec(dst[:257], w, x[:512])
			b.MatMul(dst, w, x, 4)
			b.ExpertFFN(dst[:256], e, act, x[:256], 1)
			b.MatMul(dst, w, x, 64) // the blocked kernels
			b.ExpertFFN(dst[:9*256], e, act, x[:9*256], 9)
		})
		require.Zero(t, allocs, b.Name())
	}
}
