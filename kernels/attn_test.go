package kernels_test

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/kernels"
	"github.com/deltafin/deltafin/kernels/conformance"
)

// TestAttentionConformance holds the tiled attention of every CPU backend
// (the C kernels of avx512, avx2, neon and c; the plain-Go tiles through
// ref, which is no Attender) to AttentionRef, at 1 and 3 threads and one
// per core.
func TestAttentionConformance(t *testing.T) {
	t.Parallel()
	conformance.Attention(t, cpuAtThreads(t)...)
}

// cpuAtThreads is ref and every fast CPU backend at 1 and 3 threads and
// one per core: the kernels that run on the caller's goroutine must give
// the same bits at each.
func cpuAtThreads(t *testing.T) []kernels.Backend {
	bs := []kernels.Backend{kernels.Ref()}
	for _, n := range []int{1, 3, runtime.NumCPU()} {
		bs = append(bs, kernels.FastBackends(t, n)...)
	}
	return bs
}

// The tolerance is not so loose that a kernel attending to one key too
// many (the next position, past the causal edge) would pass.
func TestAttnTolCatchesOneKeyTooMany(t *testing.T) {
	t.Parallel()
	c := conformance.AttnCase{T: 100, Heads: 2, QK: 24, DV: 16, Spread: 1}
	a := conformance.NewAttn(rand.New(rand.NewPCG(1, 2)), c)
	want := make([]float32, len(a.Dst))
	ref := a
	ref.Dst = want
	kernels.AttentionRef(ref)
	// Row t of a call with one more cached position sees key t+1 of a.
	wrong := kernels.Attn{T: 1, Past: 50, Heads: 2, QK: 24, DV: 16, Scale: a.Scale, K: a.K, V: a.V, Dst: make([]float32, 2*16)}
	wrong.Q = a.Q[49*2*24 : 50*2*24]
	kernels.AttentionRef(wrong)
	tol := conformance.AttnTol(a)
	over := false
	for i, g := range wrong.Dst {
		j := 49*2*16 + i
		over = over || float64(max(g-want[j], want[j]-g)) > tol[j]
	}
	require.True(t, over, "row 49 with key 50 passed as row 49")
}

func TestAttentionBadShapesPanic(t *testing.T) {
	t.Parallel()
	a := kernels.Attn{T: 2, Heads: 1, QK: 4, DV: 4, Q: make([]float32, 8), K: make([]float32, 7), V: make([]float32, 8), Dst: make([]float32, 8)}
	require.Panics(t, func() { _ = kernels.Attention(t.Context(), kernels.Ref(), a) })
	require.Panics(t, func() { kernels.AttentionRef(a) })
}

// TestGemmConformance holds every CPU backend's small-matrix product (ref:
// GemmRef itself) to GemmRef.
func TestGemmConformance(t *testing.T) {
	t.Parallel()
	conformance.Gemm(t, append([]kernels.Backend{kernels.Ref()}, kernels.FastBackends(t, 1)...)...)
}

func TestGemmBadShapesPanic(t *testing.T) {
	t.Parallel()
	g := kernels.Gemm{M: 2, K: 3, N: 2, LDA: 3, LDB: 2, LDC: 2, A: make([]float32, 6), B: make([]float32, 5), C: make([]float32, 4)}
	require.Panics(t, func() { kernels.MatMulF32(kernels.Default(), g) })
}
