//go:build linux && cgo

package vulkan

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/deltafin/deltafin/kernels"
	"github.com/deltafin/deltafin/kernels/conformance"
	"github.com/deltafin/deltafin/kernels/gpu"
	"github.com/stretchr/testify/require"
)

var (
	once      sync.Once
	sharedDev *Device
	shared    *gpu.Backend
	openEr    error
)

// device opens the backend once for the test binary (opening a Vulkan
// device compiles every pipeline: about a second on lavapipe).
func device(t *testing.T) *gpu.Backend {
	t.Helper()
	once.Do(func() {
		sharedDev, openEr = OpenDevice()
		if openEr == nil {
			shared = gpu.New("vulkan", sharedDev, nil)
		}
	})
	require.NoError(t, openEr, "make deps installs mesa-vulkan-drivers (lavapipe)")
	return shared
}

// limited is the opened device with a smaller per-binding limit, as a
// device with small storage buffers has it.
type limited struct {
	*Device
	max int
}

func (l limited) MaxBuffer() int { return l.max }

func requireWithin(t *testing.T, want, got []float32, tol []float64, what string) {
	t.Helper()
	require.Len(t, got, len(want))
	if i := conformance.Worst(want, got, tol); i >= 0 {
		require.Failf(t, "vulkan differs from ref", "%s: element %d: ref %g, vulkan %g, tol %g", what, i, want[i], got[i], tol[i])
	}
}

func TestMatMulMatchesRef(t *testing.T) {
	b := device(t)
	t.Logf("device %s", b.Device())
	rng := rand.New(rand.NewPCG(1, 2))
	for _, dt := range []kernels.DType{kernels.F32, kernels.BF16, kernels.F16, kernels.I8, kernels.MXFP4} {
		colsList := []int{1, 7, 33, 257}
		if dt == kernels.MXFP4 {
			colsList = []int{32, 96, 512}
		}
		for _, rows := range []int{1, 3, 65} {
			for _, cols := range colsList {
				for _, n := range []int{1, 3, 9} { // 9: two passes of 8 positions
					name := fmt.Sprintf("%s/%dx%d/n%d", dt, rows, cols, n)
					t.Run(name, func(t *testing.T) {
						w := conformance.RandMatrix(rng, dt, rows, cols)
						x := conformance.RandVec(rng, n*cols)
						want, got := make([]float32, n*rows), make([]float32, n*rows)
						kernels.Ref().MatMul(want, w, x, n)
						b.MatMul(got, w, x, n)
						requireWithin(t, want, got, conformance.MatMulTol(w, x, n), name)
					})
				}
			}
		}
	}
	require.NoError(t, b.Err())
}

// TestMatMulK3Shapes runs real projection shapes: the routed expert's
// 3072×3584 MXFP4, a 1031-row slice of the 12288×7168 BF16 and INT8
// projections, and prefill of 5 positions.
func TestMatMulK3Shapes(t *testing.T) {
	b := device(t)
	rng := rand.New(rand.NewPCG(3, 4))
	cases := []struct {
		dt         kernels.DType
		rows, cols int
		n          int
	}{
		{kernels.MXFP4, 3072, 3584, 1},
		{kernels.MXFP4, 3584, 3072, 1},
		{kernels.BF16, 1031, 7168, 1},
		{kernels.I8, 1031, 7168, 1},
		{kernels.BF16, 1031, 7168, 5},
		{kernels.MXFP4, 1031, 7168, 5},
	}
	for _, c := range cases {
		name := fmt.Sprintf("%s/%dx%d/n%d", c.dt, c.rows, c.cols, c.n)
		t.Run(name, func(t *testing.T) {
			w := conformance.RandMatrix(rng, c.dt, c.rows, c.cols)
			x := conformance.RandVec(rng, c.n*c.cols)
			want, got := make([]float32, c.n*c.rows), make([]float32, c.n*c.rows)
			kernels.Ref().MatMul(want, w, x, c.n)
			b.MatMul(got, w, x, c.n)
			requireWithin(t, want, got, conformance.MatMulTol(w, x, c.n), name)
		})
	}
	require.NoError(t, b.Err())
}

// A matrix larger than one binding (lm_head on a device with 128 MiB
// buffers) runs in row blocks; the result is the same.
func TestMatMulInRowBlocks(t *testing.T) {
	device(t)
	rng := rand.New(rand.NewPCG(5, 6))
	for _, dt := range []kernels.DType{kernels.BF16, kernels.I8, kernels.MXFP4} {
		t.Run(dt.String(), func(t *testing.T) {
			w := conformance.RandMatrix(rng, dt, 300, 256)
			x := conformance.RandVec(rng, 2*256)
			want, got := make([]float32, 2*300), make([]float32, 2*300)
			kernels.Ref().MatMul(want, w, x, 2)
			b := gpu.New("vulkan", limited{sharedDev, 49 * len(w.Data) / 300}, nil) // 49-row blocks
			b.MatMul(got, w, x, 2)
			requireWithin(t, want, got, conformance.MatMulTol(w, x, 2), dt.String())
			require.NoError(t, b.Err())
		})
	}
}

func TestExpertFFNMatchesRef(t *testing.T) {
	b := device(t)
	rng := rand.New(rand.NewPCG(7, 8))
	acts := []kernels.Activation{{Kind: kernels.SiLU}, {Kind: kernels.SiTU, Beta: 4, LinearBeta: 25}}
	type shape struct {
		dt         kernels.DType
		inter, dim int
		n          int
	}
	shapes := []shape{
		{kernels.MXFP4, 32, 64, 1}, {kernels.MXFP4, 96, 32, 3}, {kernels.MXFP4, 64, 128, 11},
		{kernels.BF16, 7, 13, 1}, {kernels.BF16, 33, 17, 2}, {kernels.F32, 5, 3, 4}, {kernels.I8, 9, 31, 1},
	}
	if !testing.Short() { // the K3 routed expert: 17.5 MB
		shapes = append(shapes, shape{kernels.MXFP4, 3072, 3584, 1}, shape{kernels.MXFP4, 3072, 3584, 3})
	}
	for _, sh := range shapes {
		for _, act := range acts {
			name := fmt.Sprintf("%s/I%d/D%d/n%d/act%d", sh.dt, sh.inter, sh.dim, sh.n, act.Kind)
			t.Run(name, func(t *testing.T) {
				e := kernels.Expert{
					W1: conformance.RandMatrix(rng, sh.dt, sh.inter, sh.dim),
					W2: conformance.RandMatrix(rng, sh.dt, sh.dim, sh.inter),
					W3: conformance.RandMatrix(rng, sh.dt, sh.inter, sh.dim),
				}
				x := conformance.RandVec(rng, sh.n*sh.dim)
				want, got := make([]float32, sh.n*sh.dim), make([]float32, sh.n*sh.dim)
				kernels.Ref().ExpertFFN(want, e, act, x, sh.n)
				b.ExpertFFN(got, e, act, x, sh.n)
				requireWithin(t, want, got, conformance.FFNTol(e, act, x, sh.n), name)
			})
		}
	}
	require.NoError(t, b.Err())
}

// TestActivationUlps holds the shaders' exp/tanh/sigmoid (Cephes, not
// GLSL's exp, whose error grows with |x|) to 16 ulps of
// kernels.Activation.Apply over the range gate and up values take, through
// an expert whose W1, W3 and W2 are identities: act(x, x) comes back as is.
func TestActivationUlps(t *testing.T) {
	b := device(t)
	const dim = 64
	id := kernels.Matrix{DType: kernels.F32, Rows: dim, Cols: dim, Data: make([]byte, 4*dim*dim)}
	for i := range dim {
		id.Data[4*(i*dim+i)+2], id.Data[4*(i*dim+i)+3] = 0x80, 0x3f // 1.0f
	}
	rng := rand.New(rand.NewPCG(17, 18))
	const n = 64
	x := make([]float32, n*dim)
	for i := range x {
		x[i] = float32(math.Copysign(math.Pow(10, rng.Float64()*8-5), rng.Float64()-0.5))
	}
	x[0] = 0
	for _, act := range []kernels.Activation{{Kind: kernels.SiLU}, {Kind: kernels.SiTU, Beta: 4, LinearBeta: 25}} {
		got := make([]float32, n*dim)
		b.ExpertFFN(got, kernels.Expert{W1: id, W2: id, W3: id}, act, x, n)
		for i, v := range x {
			want := act.Apply(v, v)
			tol := 16 * ulp(want)
			if math.Abs(float64(want)) < 1e-30 {
				tol = max(tol, 1e-30)
			}
			require.LessOrEqualf(t, math.Abs(float64(want)-float64(got[i])), tol, "act %d x=%g: want %g got %g", act.Kind, v, want, got[i])
		}
	}
	require.NoError(t, b.Err())
}

func ulp(v float32) float64 {
	a := math.Abs(float64(v))
	if a < 1.1754944e-38 {
		return math.Ldexp(1, -149)
	}
	_, e := math.Frexp(a)
	return math.Ldexp(1, e-24)
}

// When the device cannot take a call (here: an expert larger than the
// binding limit) the call is computed by the CPU fallback, exactly as that
// backend computes it, and Err says why.
func TestFallbackRunsOnTheCPU(t *testing.T) {
	device(t)
	b := gpu.New("vulkan", limited{sharedDev, 100}, nil)
	rng := rand.New(rand.NewPCG(9, 10))
	e := kernels.Expert{
		W1: conformance.RandMatrix(rng, kernels.MXFP4, 64, 96),
		W2: conformance.RandMatrix(rng, kernels.MXFP4, 96, 64),
		W3: conformance.RandMatrix(rng, kernels.MXFP4, 64, 96),
	}
	act := kernels.Activation{Kind: kernels.SiTU, Beta: 4, LinearBeta: 25}
	x := conformance.RandVec(rng, 2*96)
	want, got := make([]float32, 2*96), make([]float32, 2*96)
	b.Fallback().ExpertFFN(want, e, act, x, 2)
	b.ExpertFFN(got, e, act, x, 2)
	require.Equal(t, want, got)
	require.ErrorIs(t, b.Err(), gpu.ErrLimit)
	require.NoError(t, b.Err(), "Err forgets what it reported")
}

func TestRegisteredWithKernels(t *testing.T) {
	device(t)
	require.Contains(t, kernels.Available(), "vulkan")
	be, err := kernels.ByName("vulkan")
	require.NoError(t, err)
	require.Equal(t, "vulkan", be.Name())
	auto, err := kernels.ByName("auto")
	require.NoError(t, err)
	require.NotEqual(t, "vulkan", auto.Name(), "auto stays on the CPU")
}

func TestBadShapesPanic(t *testing.T) {
	b := device(t)
	w := kernels.Matrix{DType: kernels.BF16, Rows: 2, Cols: 3, Data: make([]byte, 12)}
	require.Panics(t, func() { b.MatVec(make([]float32, 2), w, make([]float32, 2)) })
	require.Panics(t, func() { b.MatVec(make([]float32, 1), w, make([]float32, 3)) })
	w.Data = w.Data[:10]
	require.Panics(t, func() { b.MatVec(make([]float32, 2), w, make([]float32, 3)) })
}
