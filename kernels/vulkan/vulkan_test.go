//go:build linux && cgo

package vulkan

import (
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/deltafin/deltafin/kernels"
	"github.com/deltafin/deltafin/kernels/conformance"
	"github.com/deltafin/deltafin/kernels/gpu"
	"github.com/deltafin/deltafin/kernels/shaders"
	"github.com/stretchr/testify/require"
)

var (
	once      sync.Once
	sharedDev *Device
	shared    *gpu.Backend
	openEr    error
)

// device opens the backend once for the test binary (opening a Vulkan
// device compiles every pipeline: about a second on lavapipe). The tests
// do not run in parallel: several wrap this one Device in backends of
// their own (limited, resident budgets), and only a backend serialises the
// calls to its device (TestConformance runs its cases in parallel on the
// one backend).
func device(t testing.TB) *gpu.Backend {
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

// TestConformance holds the device to the reference through the suite every
// backend runs (kernels/conformance).
func TestConformance(t *testing.T) {
	b := device(t)
	t.Logf("device %s", b.Device())
	conformance.Run(t, b)
}

// TestConformanceBigTiles runs the suite again with every product over 32
// positions in mmbig.comp's 128×64 tiles, which the default rule keeps for
// products that fill a large GPU (none of the suite's shapes).
func TestConformanceBigTiles(t *testing.T) {
	device(t)
	b := gpu.New("vulkan", sharedDev, nil)
	b.SetBigTileMinGroups(1)
	conformance.Run(t, b)
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
			conformance.RequireWithin(t, want, got, conformance.MatMulTol(w, x, 2), dt.String())
			require.NoError(t, b.Err())
		})
	}
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

// TestDeviceTimes: the device's own clock counts a product's shaders and
// its operands' copies, each call adding to them (lavapipe has
// timestamps).
func TestDeviceTimes(t *testing.T) {
	b := device(t)
	sh0, cp0, ok := b.DeviceTimes()
	require.True(t, ok, "lavapipe's queue has timestamps")
	const rows, cols, n = 256, 512, 64
	w := kernels.Matrix{DType: kernels.F32, Rows: rows, Cols: cols, Data: make([]byte, 4*rows*cols)}
	x, dst := make([]float32, n*cols), make([]float32, n*rows)
	for i := range x {
		x[i] = float32(i%5) - 2
	}
	b.MatMul(dst, w, x, n)
	require.NoError(t, b.Err(), "the product ran on the device")
	sh1, cp1, _ := b.DeviceTimes()
	require.Greater(t, sh1, sh0, "the shaders' time grew")
	require.Greater(t, cp1, cp0, "the copies' time grew")
	b.MatMul(dst, w, x, n)
	sh2, cp2, _ := b.DeviceTimes()
	require.Greater(t, sh2, sh1)
	require.Greater(t, cp2, cp1)
}

// TestCopiesBackEndACall: a dispatch after a copy back is refused (the
// copies back run after the call's shaders, on a queue of their own where
// the device has a second transfer queue, vk.c), and the call still ends
// with its copy back.
func TestCopiesBackEndACall(t *testing.T) {
	device(t)
	d := sharedDev
	for i := range 2 {
		_, err := d.Slot(i, 64)
		require.NoError(t, err)
	}
	require.NoError(t, d.Begin())
	// The same dispatch runs before the copy back (no elements: it changes
	// nothing), not after it.
	act := func() error { return d.Dispatch(shaders.Act, []int{0, 1}, []uint32{0, 0, 0, 0}, 1, 1) }
	require.NoError(t, act(), "a dispatch before the copies back")
	require.NoError(t, d.ToHost(0, 64))
	require.Error(t, act(), "a dispatch after the copies back")
	require.NoError(t, d.Submit(), "the call ends with its copy back")
}

// TestConformancePipelined runs the suite with streamed weights cut into
// pieces of 1 KB: a product's row pieces and a group's batches of experts
// each one call, the next staged in the other slot set while it runs.
func TestConformancePipelined(t *testing.T) {
	device(t)
	b := gpu.New("vulkan", sharedDev, nil)
	b.SetPipelineChunk(1 << 10)
	conformance.Run(t, b)
	require.NoError(t, b.Err())
	require.Positive(t, b.PipelinedCalls(), "some call ran while the next was staged")
}

// A pipelined product or group of experts gives the bits of the same call
// in one piece: the pieces split rows and experts, never a sum.
func TestPipelinedIsOnePiece(t *testing.T) {
	device(t)
	rng := rand.New(rand.NewPCG(11, 12))
	whole, piped := gpu.New("vulkan", sharedDev, nil), gpu.New("vulkan", sharedDev, nil)
	whole.SetPipelineChunk(-1)
	piped.SetPipelineChunk(4 << 10)
	for _, dt := range []kernels.DType{kernels.BF16, kernels.I8, kernels.MXFP4, kernels.F16} {
		w := conformance.RandMatrix(rng, dt, 701, 96)
		for _, n := range []int{1, 3, 40} {
			x := conformance.RandVec(rng, n*96)
			want, got := make([]float32, n*701), make([]float32, n*701)
			whole.MatMul(want, w, x, n)
			before := piped.PipelinedCalls()
			piped.MatMul(got, w, x, n)
			require.Equal(t, want, got, "%s × %d", dt, n)
			require.Greater(t, piped.PipelinedCalls(), before, "%s × %d ran in pieces", dt, n)
		}
	}
	// Seven experts of 16 KB of weights, in batches of two or three.
	act := kernels.Activation{Kind: kernels.SiTU, Beta: 4, LinearBeta: 25}
	var es []kernels.Expert
	var xs, want, got [][]float32
	var ns []int
	for j := range 7 {
		es = append(es, kernels.Expert{
			W1: conformance.RandMatrix(rng, kernels.MXFP4, 128, 96),
			W2: conformance.RandMatrix(rng, kernels.MXFP4, 96, 128),
			W3: conformance.RandMatrix(rng, kernels.MXFP4, 128, 96),
		})
		n := 2 + 5*j
		ns = append(ns, n)
		xs = append(xs, conformance.RandVec(rng, n*96))
		want, got = append(want, make([]float32, n*96)), append(got, make([]float32, n*96))
	}
	whole.ExpertGroupFFN(want, es, act, xs, ns)
	before := piped.PipelinedCalls()
	piped.ExpertGroupFFN(got, es, act, xs, ns)
	require.Equal(t, want, got)
	require.GreaterOrEqual(t, piped.PipelinedCalls()-before, int64(2), "the experts went in batches")
	require.NoError(t, whole.Err())
	require.NoError(t, piped.Err())
}
