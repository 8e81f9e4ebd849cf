package kernels

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// counting is a real backend (the reference) that records which calls it ran.
type counting struct {
	Backend
	calls *[]int
}

func (c counting) MatMul(dst []float32, w Matrix, x []float32, n int) {
	*c.calls = append(*c.calls, n)
	c.Backend.MatMul(dst, w, x, n)
}

func (c counting) MatVec(dst []float32, w Matrix, x []float32) { c.MatMul(dst, w, x, 1) }

func (c counting) ExpertFFN(dst []float32, e Expert, act Activation, x []float32, n int) {
	*c.calls = append(*c.calls, -n)
	c.Backend.ExpertFFN(dst, e, act, x, n)
}

func TestSplitSendsPrefillAndDecodeApart(t *testing.T) {
	var pre, dec []int
	s := Split(counting{Ref(), &pre}, counting{Ref(), &dec})
	require.Equal(t, "ref+ref", s.Name())
	rng := rand.New(rand.NewPCG(1, 2))
	w := randMatrix(rng, MXFP4, 4, 64)
	e := Expert{W1: randMatrix(rng, BF16, 3, 64), W2: randMatrix(rng, BF16, 64, 3), W3: randMatrix(rng, BF16, 3, 64)}
	x := randVec(rng, 5*64)
	for _, n := range []int{1, 5} {
		want, got := make([]float32, n*4), make([]float32, n*4)
		Ref().MatMul(want, w, x, n)
		s.MatMul(got, w, x, n)
		require.Equal(t, want, got)
		wantF, gotF := make([]float32, n*64), make([]float32, n*64)
		Ref().ExpertFFN(wantF, e, Activation{}, x, n)
		s.ExpertFFN(gotF, e, Activation{}, x, n)
		require.Equal(t, wantF, gotF)
	}
	s.MatVec(make([]float32, 4), w, x[:64])
	require.Equal(t, []int{5, -5}, pre)
	require.Equal(t, []int{1, -1, 1}, dec)
	require.Equal(t, 1, Threads(s))
}
