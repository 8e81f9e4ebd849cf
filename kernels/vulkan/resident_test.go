//go:build linux && cgo

package vulkan

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/kernels"
	"github.com/deltafin/deltafin/kernels/conformance"
	"github.com/deltafin/deltafin/kernels/gpu"
)

// Keyed (resident) weights are uploaded once and read from device memory;
// the arithmetic is the same shader's, so the result is bit-identical to
// the per-call upload, in row blocks too, before and after eviction.
func TestResidentWeightsGiveTheSameResult(t *testing.T) {
	device(t)
	rng := rand.New(rand.NewPCG(21, 22))
	for _, dt := range []kernels.DType{kernels.BF16, kernels.I8, kernels.MXFP4} {
		t.Run(dt.String(), func(t *testing.T) {
			w := conformance.RandMatrix(rng, dt, 300, 256)
			x := conformance.RandVec(rng, 3*256)
			want, plain := make([]float32, 3*300), make([]float32, 3*300)
			kernels.Ref().MatMul(want, w, x, 3)
			b := gpu.New("vulkan", limited{sharedDev, 49 * len(w.Data) / 300}, nil) // 49-row blocks
			b.MatMul(plain, w, x, 3)
			conformance.RequireWithin(t, want, plain, conformance.MatMulTol(w, x, 3), dt.String())

			w.Key = kernels.NewKey()
			for pass := range 3 {
				got := make([]float32, 3*300)
				b.MatMul(got, w, x, 3)
				require.Equal(t, plain, got, "pass %d", pass)
				require.Equal(t, int64(len(w.Data)+len(w.Scales)), b.ResidentBytes(), "every block stays on the device")
			}
			// A budget below one block: nothing stays; the result is the same.
			b.SetResidentBudget(int64(len(w.Data) / 100))
			require.Zero(t, b.ResidentBytes())
			got := make([]float32, 3*300)
			b.MatMul(got, w, x, 3)
			require.Equal(t, plain, got)
			require.NoError(t, b.Err())
		})
	}
}

// With room for two of three matrices, the least recently used goes.
func TestResidentEvictsTheLeastRecentlyUsed(t *testing.T) {
	device(t)
	rng := rand.New(rand.NewPCG(23, 24))
	b := gpu.New("vulkan", sharedDev, nil)
	var ws []kernels.Matrix
	for range 3 {
		w := conformance.RandMatrix(rng, kernels.BF16, 64, 128)
		w.Key = kernels.NewKey()
		ws = append(ws, w)
	}
	size := int64(len(ws[0].Data))
	b.SetResidentBudget(2 * size)
	x := conformance.RandVec(rng, 128)
	run := func(w kernels.Matrix) {
		want, got := make([]float32, 64), make([]float32, 64)
		kernels.Ref().MatVec(want, w, x)
		b.MatVec(got, w, x)
		conformance.RequireWithin(t, want, got, conformance.MatMulTol(w, x, 1), "matvec")
	}
	run(ws[0])
	run(ws[1])
	run(ws[0]) // ws[1] is now the least recently used
	run(ws[2])
	require.Equal(t, 2*size, b.ResidentBytes())
	for _, w := range ws {
		run(w)
	}
	require.True(t, b.KeepsResident())
	b.SetResidentBudget(-1)
	require.False(t, b.KeepsResident(), "a budget of none: Accelerate treats keyed weights as streamed")
	require.Zero(t, b.ResidentBytes())
	require.NoError(t, b.Err())
}

// A resident expert (a dense MLP or shared expert of the pinned spine).
func TestResidentExpertFFN(t *testing.T) {
	device(t)
	rng := rand.New(rand.NewPCG(25, 26))
	b := gpu.New("vulkan", sharedDev, nil)
	act := kernels.Activation{Kind: kernels.SiTU, Beta: 4, LinearBeta: 25}
	for _, dt := range []kernels.DType{kernels.BF16, kernels.MXFP4} {
		for _, n := range []int{1, 4} {
			name := fmt.Sprintf("%s/n%d", dt, n)
			t.Run(name, func(t *testing.T) {
				e := kernels.Expert{
					W1: conformance.RandMatrix(rng, dt, 96, 128), W2: conformance.RandMatrix(rng, dt, 128, 96),
					W3: conformance.RandMatrix(rng, dt, 96, 128),
				}
				x := conformance.RandVec(rng, n*128)
				plain, got, want := make([]float32, n*128), make([]float32, n*128), make([]float32, n*128)
				kernels.Ref().ExpertFFN(want, e, act, x, n)
				b.ExpertFFN(plain, e, act, x, n)
				e.W1.Key, e.W2.Key, e.W3.Key = kernels.NewKey(), kernels.NewKey(), kernels.NewKey()
				before := b.ResidentBytes()
				b.ExpertFFN(got, e, act, x, n)
				b.ExpertFFN(got, e, act, x, n)
				require.Equal(t, plain, got)
				conformance.RequireWithin(t, want, got, conformance.FFNTol(e, act, x, n), name)
				require.Greater(t, b.ResidentBytes(), before)
			})
		}
	}
	require.NoError(t, b.Err())
}

// lavapipe is software: "auto" must not take it.
func TestAutoSkipsTheSoftwareDevice(t *testing.T) {
	d := device(t)
	if HasHardware() {
		t.Skipf("this machine has a hardware GPU besides %s", d.Device())
	}
	b, err := kernels.ByName("auto")
	require.NoError(t, err)
	require.Equal(t, kernels.Default().Name(), b.Name())
}
