package conformance

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/kernels"
)

// Run holds every backend in bs to the pure-Go reference: one suite for the
// CPU instruction sets, Vulkan and Metal, so that a check added here
// reaches every backend. Each case makes its inputs and reference once and
// checks every backend on them (a subtest per backend, named NAME/tTHREADS);
// cases of a group run in parallel, each from its own seed.
//
// K3-sized cases run once per backend kind (k3Sized). In -short mode (the
// NEON build under qemu) they are left out; the full 163840-row lm_head
// needs the build tag slow.
//
// A backend with an Err method (kernels/gpu) must report no error after a
// group: every call ran on its device, none fell back to the CPU.
func Run(t *testing.T, bs ...kernels.Backend) {
	t.Helper()
	require.NotEmpty(t, bs, "conformance.Run needs a backend")
	groups := []struct {
		name string
		run  func(*testing.T, []kernels.Backend)
	}{
		{"MatMulRandomShapes", matMulRandom},
		{"MatMulK3Shapes", matMulK3},
		{"MXFP4EveryScale", mxfp4EveryScale},
		{"ExpertFFN", expertFFN},
		{"ExpertFFNMixedTypes", expertFFNMixed},
		{"Activation", activationUlps},
		{"ExpertsFFNIsExpertFFNOneByOne", expertsFFN},
		{"ExpertGroupFFNIsExpertFFNOneByOne", expertGroupFFN},
		{"LatentAttentionIsItsSteps", latentAttention},
		{"StaysInsideItsBytes", staysInside},
		{"BadShapesPanic", badShapes},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			g.run(t, bs)
			for _, b := range bs {
				if e, ok := b.(interface{ Err() error }); ok {
					require.NoError(t, e.Err(), "%s: a call fell back to the CPU", label(b))
				}
			}
		})
	}
}

// label names a backend and its thread count.
func label(b kernels.Backend) string { return fmt.Sprintf("%s/t%d", b.Name(), kernels.Threads(b)) }

// each runs check on every backend, as one subtest per backend.
func each(t *testing.T, bs []kernels.Backend, check func(t *testing.T, b kernels.Backend)) {
	t.Helper()
	for _, b := range bs {
		t.Run(label(b), func(t *testing.T) { check(t, b) })
	}
}

// k3Sized picks the backends a K3-sized case runs on: one per name, the one
// with the most threads, and not the reference (which is the oracle: each
// of its runs on lm_head costs seconds and cannot differ). The random
// shapes cover every thread count; at K3 size every extra run costs.
func k3Sized(bs []kernels.Backend) []kernels.Backend {
	var out []kernels.Backend
	at := map[string]int{}
	for _, b := range bs {
		if b.Name() == kernels.Ref().Name() {
			continue
		}
		i, ok := at[b.Name()]
		switch {
		case !ok:
			at[b.Name()] = len(out)
			out = append(out, b)
		case kernels.Threads(b) > kernels.Threads(out[i]):
			out[i] = b
		}
	}
	if len(out) == 0 {
		return bs // the reference alone: check it
	}
	return out
}

// parallel runs case i of n as a parallel subtest called name(i), with a
// generator seeded by (seed, i).
func parallel(t *testing.T, n int, seed uint64, name func(i int) string, body func(t *testing.T, rng *rand.Rand, i int)) {
	t.Helper()
	for i := range n {
		t.Run(name(i), func(t *testing.T) {
			t.Parallel()
			body(t, rand.New(rand.NewPCG(seed, uint64(i))), i)
		})
	}
}

// RequireWithin fails unless |want − got| ≤ tol elementwise (NaN fails).
func RequireWithin(t *testing.T, want, got []float32, tol []float64, what string) {
	t.Helper()
	require.Len(t, got, len(want))
	if i := Worst(want, got, tol); i >= 0 {
		require.Failf(t, "backend differs from ref", "%s: element %d: ref %g, got %g, |Δ| %g > tol %g",
			what, i, want[i], got[i], math.Abs(float64(want[i])-float64(got[i])), tol[i])
	}
}

type matCase struct {
	dt         kernels.DType
	rows, cols int
	n          int
}

func (c matCase) String() string { return fmt.Sprintf("%s/%dx%d/n%d", c.dt, c.rows, c.cols, c.n) }

// checkMatMul runs W·x on every backend against the reference, within
// MatMulTol; mutate, when set, may move w's bytes (guard pages) first.
func checkMatMul(t *testing.T, bs []kernels.Backend, rng *rand.Rand, c matCase, mutate func(*kernels.Matrix)) {
	w := RandMatrix(rng, c.dt, c.rows, c.cols)
	require.NoError(t, w.Validate())
	if mutate != nil {
		mutate(&w)
	}
	x := RandVec(rng, c.n*c.cols)
	want := make([]float32, c.n*c.rows)
	kernels.Ref().MatMul(want, w, x, c.n)
	tol := MatMulTol(w, x, c.n)
	bits := threadBits{}
	each(t, bs, func(t *testing.T, b kernels.Backend) {
		got := make([]float32, c.n*c.rows)
		b.MatMul(got, w, x, c.n)
		RequireWithin(t, want, got, tol, c.String())
		bits.check(t, b, got)
	})
}

// threadBits holds each backend name's first output so that the same
// backend on other threads must give those bits exactly: the engine runs
// a prompt's CPU experts on fewer threads while a GPU runs others
// (kernels.OnCPUBesideGPU), and a prompt's bits may not depend on that.
type threadBits map[string][]float32

func (m threadBits) check(t *testing.T, b kernels.Backend, got []float32) {
	t.Helper()
	if prev, ok := m[b.Name()]; ok {
		require.Equal(t, prev, got, "%s: the bits depend on the threads", label(b))
		return
	}
	m[b.Name()] = got
}

var allDTypes = []kernels.DType{kernels.F32, kernels.BF16, kernels.F16, kernels.I8, kernels.MXFP4}

// matMulRandom: every dtype on shapes around the kernels' block edges (8
// and 32 columns, MXFP4's 128-column chunks; the blocked matmul's 128-column
// panels, 64-row blocks and register tiles of 6 and 8 rows) and positions
// around its tiles of 8, 16 and 32 and the GPU's passes of 8, up to 512.
// The larger position counts run on fewer shapes, every edge still covered.
func matMulRandom(t *testing.T, bs []kernels.Backend) {
	var cases []matCase
	for _, dt := range allDTypes {
		// 64: whole 32-column tiles, where mmbig.comp prefetches the words.
		colsList := []int{1, 3, 7, 8, 31, 33, 100, 257, 64}
		if dt == kernels.MXFP4 {
			colsList = []int{32, 64, 96, 224, 384, 512}
		}
		for _, rows := range []int{1, 3, 7, 13, 65, 131} {
			for ci, cols := range colsList {
				for _, n := range []int{1, 2, 3, 7, 8, 9, 63, 64, 65, 200, 512, 1100} {
					if n >= 63 && (rows == 3 || ci%2 == 1) || n >= 200 && rows == 13 || rows == 131 && n < 8 ||
						n == 1100 && (rows != 7 || ci > 2) { // 1100: three passes of at most 512
						continue
					}
					cases = append(cases, matCase{dt, rows, cols, n})
				}
			}
		}
	}
	parallel(t, len(cases), 1, func(i int) string { return cases[i].String() }, func(t *testing.T, rng *rand.Rand, i int) {
		checkMatMul(t, bs, rng, cases[i], nil)
	})
}

// matMulK3: the real projection shapes, on k3Sized's backends. KDA q/k/v/g (12288×7168, BF16 and
// the int8 spine), a 1031-row slice of them, the routed experts' w1/w3
// (3072×3584) and w2 (3584×3072), prefill of 5 positions, and lm_head
// (4099 of its rows; all 163840, 2.3 GB of BF16, with -tags slow).
func matMulK3(t *testing.T, bs []kernels.Backend) {
	if testing.Short() {
		t.Skip("K3 shapes: minutes under emulation")
	}
	cases := []matCase{
		{kernels.BF16, 12288, 7168, 1},
		{kernels.I8, 12288, 7168, 1},
		{kernels.F16, 3584, 3072, 1},
		{kernels.F32, 3072, 3584, 1},
		{kernels.MXFP4, 3072, 3584, 1},
		{kernels.MXFP4, 3584, 3072, 1},
		{kernels.BF16, 3584, 3072, 1},
		{kernels.BF16, 1031, 7168, 1},
		{kernels.I8, 1031, 7168, 1},
		{kernels.BF16, 1031, 7168, 5},
		{kernels.I8, 1031, 7168, 5},
		{kernels.MXFP4, 1031, 7168, 5},
		{kernels.BF16, 1031, 7168, 64}, // the blocked kernels: 16 row blocks and a tail
		{kernels.I8, 515, 7168, 65},
		{kernels.MXFP4, 3584, 3072, 33},
		{kernels.BF16, 4099, 7168, 1}, // a slice of lm_head's rows, an odd count
	}
	if slow {
		cases = append(cases, matCase{kernels.BF16, 163840, 7168, 1})
	}
	big := k3Sized(bs)
	parallel(t, len(cases), 3, func(i int) string { return cases[i].String() }, func(t *testing.T, rng *rand.Rand, i int) {
		checkMatMul(t, big, rng, cases[i], nil)
	})
}

// mxfp4EveryScale gives each row one block with a scale code of its own, at
// a position that moves through whole 128-column chunks and the 32-column
// tail: kernels that build scales in the exponent field must take the table
// for 0 (2^-127, subnormal) and 255 (NaN). The weights of those blocks are
// at most 1.5 in magnitude and x is small, so that the reference's decoded
// weights (up to 1.5·2^127) and products stay finite. Row 0 has scale 0
// everywhere (its result must not be 0), and row 255's block meets x > 0
// (+Inf per lane, where NaN is wanted, would sum to +Inf).
//
// Scale 0's weights are subnormal in fp32 (|e2m1|·2^-127 < 2^-126 below
// 2), and so are its products with x. A CPU backend keeps subnormals and
// must give row 0 within 1% of the reference; a GPU may flush them to
// zero (Vulkan and Metal allow it unless denormals are asked to be kept;
// the NVIDIA H200 does, lavapipe does not), so there row 0 may also be
// exactly 0, an error of about 1e-40. K3's scales never leave 118–133.
func mxfp4EveryScale(t *testing.T, bs []kernels.Backend) {
	rng := rand.New(rand.NewPCG(21, 22))
	const rows, cols = 256, 416 // 3 chunks of 128 and one group of 32
	w := RandMatrix(rng, kernels.MXFP4, rows, cols)
	for r := range rows {
		b := r % (cols / 32)
		w.Scales[r*cols/32+b] = byte(r)
		for i := range 16 {
			w.Data[r*cols/2+16*b+i] &= 0xbb // codes 0–3 and 8–11: |e2m1| ≤ 1.5
		}
	}
	clear(w.Scales[:cols/32])
	x := RandVec(rng, cols)
	for i := range x {
		x[i] *= 1e-3
	}
	nan := 255 % (cols / 32) * 32
	for c := nan; c < nan+32; c++ {
		x[c] = float32(math.Abs(float64(x[c])))
		w.Data[255*cols/2+c/2] = 0x22 // 1.0, 1.0
	}
	want := make([]float32, rows)
	kernels.Ref().MatVec(want, w, x)
	tol := MatMulTol(w, x, 1)
	require.True(t, math.IsNaN(float64(want[255])), "ref with scale 255")
	require.NotZero(t, want[0], "ref with scale 0")
	each(t, bs, func(t *testing.T, b kernels.Backend) {
		got := make([]float32, rows)
		b.MatVec(got, w, x)
		require.True(t, math.IsNaN(float64(got[255])), "scale 255: %g", got[255])
		if got[0] != 0 || kernels.IsCPU(b) {
			require.InEpsilon(t, want[0], got[0], 1e-2, "scale 0")
		}
		RequireWithin(t, want[:255], got[:255], tol[:255], "every scale")
	})
}

// badShapes: a shape mismatch is a programmer error and panics, short
// byte slices too (the C kernels would read past them), never a wrong
// result.
func badShapes(t *testing.T, bs []kernels.Backend) {
	each(t, bs, func(t *testing.T, b kernels.Backend) {
		w := kernels.Matrix{DType: kernels.BF16, Rows: 2, Cols: 3, Data: make([]byte, 12)}
		require.Panics(t, func() { b.MatVec(make([]float32, 2), w, make([]float32, 2)) }, "short x")
		require.Panics(t, func() { b.MatVec(make([]float32, 1), w, make([]float32, 3)) }, "short dst")
		require.Panics(t, func() { b.MatMul(make([]float32, 4), w, make([]float32, 3), 2) }, "x for one position of two")
		short := w
		short.Data = w.Data[:10]
		require.Panics(t, func() { b.MatVec(make([]float32, 2), short, make([]float32, 3)) }, "short data")
		mx := kernels.Matrix{DType: kernels.MXFP4, Rows: 2, Cols: 64, Data: make([]byte, 63), Scales: make([]byte, 4)}
		require.Panics(t, func() { b.MatVec(make([]float32, 2), mx, make([]float32, 64)) }, "short MXFP4 data")
		sq := kernels.Matrix{DType: kernels.F32, Rows: 2, Cols: 3, Data: make([]byte, 24)}
		require.Panics(t, func() {
			b.ExpertFFN(make([]float32, 3), kernels.Expert{W1: sq, W2: sq, W3: sq}, kernels.Activation{}, make([]float32, 3), 1)
		}, "W2 not [D, I]")
	})
}
