package kernels

import (
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestByName(t *testing.T) {
	avail := Available()
	require.Equal(t, "ref", avail[len(avail)-1])
	require.Equal(t, avail[0], Default().Name(), "Default is the fastest available")
	if cgoKernels {
		require.NotEqual(t, "ref", Default().Name(), "a cgo build on amd64/arm64 has C kernels")
	}
	for _, name := range append([]string{"auto"}, avail...) {
		t.Run(name, func(t *testing.T) {
			b, err := ByName(name)
			require.NoError(t, err)
			if name != "auto" {
				require.Equal(t, name, b.Name())
			}
			again, err := ByName(name)
			require.NoError(t, err)
			require.True(t, b == again, "backends (and their pools) are created once")
		})
	}
	_, err := ByName("cuda")
	require.ErrorIs(t, err, ErrUnknownBackend)
	require.ErrorContains(t, err, `"cuda"`)
	b, err := Open("auto", 1)
	require.NoError(t, err)
	require.Equal(t, 1, Threads(b))
	require.Equal(t, 1, Threads(Ref()))
}

// Each output row is computed by one call of one row kernel, so the result
// cannot depend on how rows are split over threads or on concurrent callers:
// it must be identical to the bit.
func TestThreadsAndConcurrencyDoNotChangeBits(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(13, 14))
	w := randMatrix(rng, MXFP4, 1001, 512)
	e := Expert{W1: randMatrix(rng, MXFP4, 96, 256), W2: randMatrix(rng, MXFP4, 256, 96), W3: randMatrix(rng, MXFP4, 96, 256)}
	act := Activation{Kind: SiTU, Beta: 4, LinearBeta: 25}
	x := randVec(rng, 65*512)
	const nb = 65 // the blocked kernels, a tail tile included
	for _, one := range fastBackends(t, 1) {
		name := one.Name()
		want := make([]float32, 3*1001)
		one.MatMul(want, w, x, 3)
		wantFFN := make([]float32, 256)
		one.ExpertFFN(wantFFN, e, act, x[:256], 1)
		wantB := make([]float32, nb*1001)
		one.MatMul(wantB, w, x, nb)
		wantFFNB := make([]float32, 9*256)
		one.ExpertFFN(wantFFNB, e, act, x[:9*256], 9)
		many, err := Open(name, 5)
		require.NoError(t, err)
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for range 20 {
					got := make([]float32, 3*1001)
					many.MatMul(got, w, x, 3)
					require.Equal(t, want, got)
					gotFFN := make([]float32, 256)
					many.ExpertFFN(gotFFN, e, act, x[:256], 1)
					require.Equal(t, wantFFN, gotFFN)
					gotB := make([]float32, nb*1001)
					many.MatMul(gotB, w, x, nb)
					require.Equal(t, wantB, gotB)
					gotFFNB := make([]float32, 9*256)
					many.ExpertFFN(gotFFNB, e, act, x[:9*256], 9)
					require.Equal(t, wantFFNB, gotFFNB)
				}
			})
		}
		wg.Wait()
	}
}

// The CPU backends' panics name the problem (conformance.Run checks that
// every backend panics).
func TestBadShapesPanicWithAMessage(t *testing.T) {
	t.Parallel()
	w := Matrix{DType: F32, Rows: 2, Cols: 3, Data: make([]byte, 24)}
	e := Expert{W1: w, W2: w, W3: w}
	for _, b := range append(fastBackends(t, 2), Ref()) {
		require.PanicsWithValue(t, "kernels: MatMul F32 [2,3] × 1: x has 2, dst has 2", func() {
			b.MatVec(make([]float32, 2), w, make([]float32, 2))
		}, b.Name())
		require.Panics(t, func() { b.ExpertFFN(make([]float32, 3), e, Activation{}, make([]float32, 3), 1) }, b.Name())
	}
	// The C kernels would read past short byte slices; they panic instead.
	short := Matrix{DType: MXFP4, Rows: 2, Cols: 64, Data: make([]byte, 63), Scales: make([]byte, 4)}
	for _, b := range fastBackends(t, 2) {
		require.PanicsWithValue(t, "kernels: matrix shape mismatch: MXFP4 [2,64] wants 64 data and 4 scale bytes, has 63 and 4", func() {
			b.MatVec(make([]float32, 2), short, make([]float32, 64))
		}, b.Name())
	}
	require.PanicsWithValue(t, "kernels: ExpertsFFN: 2 experts, 1 outputs, 2 inputs", func() {
		ExpertsFFN(Ref(), [][]float32{make([]float32, 64)}, []Expert{e, e}, Activation{}, [][]float32{nil, nil})
	})
}
