package engine

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/kernels"
)

// k3KDA returns random inputs of one K3 KDA layer (96 heads of 128) for T
// tokens: q, k, v, g, beta, and a state.
func k3KDA(T int) (q, k, v, g, beta, s []float32) {
	const nh, d = 96, 128
	rng := rand.New(rand.NewPCG(1, 2))
	vec := func(n int, scale float32) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = (rng.Float32()*2 - 1) * scale
		}
		return x
	}
	g = vec(T*nh*d, 1)
	for i := range g {
		g[i] = -0.1 * (g[i] + 1)
	}
	return vec(T*nh*d, 0.1), vec(T*nh*d, 0.1), vec(T*nh*d, 1), g, vec(T*nh, 0.5), vec(nh*d*d, 0.01)
}

// TestParallelHeadsAreBitIdentical: the delta rule and MLA attention give
// the same bits on one worker and on all of them.
func TestParallelHeadsAreBitIdentical(t *testing.T) {
	t.Parallel()
	const nh, d, T = 96, 128, 3
	q, k, v, g, beta, s := k3KDA(T)
	run := func(serial bool) ([]float32, []float32) {
		o, st := make([]float32, T*nh*d), append([]float32(nil), s...)
		kdaRecurrent(context.Background(), kernels.Default(), o, q, k, v, g, beta, st, T, nh, d, headSplit{serial})
		return o, st
	}
	o1, s1 := run(true)
	o2, s2 := run(false)
	require.Equal(t, o1, o2)
	require.Equal(t, s1, s2)

	m := openK3Tiny(t)
	c := m.cfg
	mlaLayer := -1
	for i, kind := range c.Kinds {
		if kind == layerMLA {
			mlaLayer = i
			break
		}
	}
	require.GreaterOrEqual(t, mlaLayer, 0)
	x := make([]float32, 200*c.Hidden) // 200 positions: several blocks, enough work for the parallel path
	for i := range x {
		x[i] = float32(i%17) / 17
	}
	// MLA attention splits heads × query blocks over the backend's threads.
	attn := func(threads int) []float32 {
		be, err := kernels.Open(m.backend.Name(), threads)
		require.NoError(t, err)
		out := make([]float32, len(x))
		require.NoError(t, m.mlaForward(context.Background(), be, out, x, 200, m.w.layers[mlaLayer].mla, &mlaCache{}))
		return out
	}
	require.Equal(t, attn(1), attn(3))
}

// BenchmarkKDADecodeStep is one decode token of one K3 KDA layer's delta
// rule: serial is the limit the parallel heads are measured against in the
// same run (report the ratio).
func BenchmarkKDADecodeStep(b *testing.B) {
	const nh, d = 96, 128
	q, k, v, g, beta, s := k3KDA(1)
	o := make([]float32, nh*d)
	for _, serial := range []bool{true, false} {
		name := "parallel"
		if serial {
			name = "serial"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(4 * len(s)))
			for b.Loop() {
				kdaRecurrent(context.Background(), kernels.Default(), o, q, k, v, g, beta, s, 1, nh, d, headSplit{serial})
			}
		})
	}
}
