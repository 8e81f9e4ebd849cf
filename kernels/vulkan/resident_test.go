//go:build linux && cgo

package vulkan

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

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
				up, took := b.Uploaded()
				require.Equal(t, int64(len(w.Data)+len(w.Scales)), up, "pass %d: copied once, counted once", pass)
				require.Positive(t, took)
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

// TestPreloadCopiesAhead: kernels.Preload through Accelerate copies a keyed
// matrix that the rule gives the GPU to the device before any product over
// it; the product then copies nothing more and gives the bits it gives
// without the preload. A matrix the rule leaves on the CPU is not copied,
// and a budget with no room stops the preload without evicting.
func TestPreloadCopiesAhead(t *testing.T) {
	device(t)
	rng := rand.New(rand.NewPCG(25, 26))
	b := gpu.New("vulkan", sharedDev, nil)
	b.SetResidentBudget(1 << 20)
	opt := kernels.AccelOptions{DecodeMinBytes: 1 << 20, ResidentMinPositions: 2, StreamedMinPositions: 2, MinIntensity: 20}
	auto := kernels.Accelerate(b, kernels.Default(), opt)
	require.True(t, kernels.Preloads(auto))
	require.False(t, kernels.Preloads(kernels.Default()))

	w := conformance.RandMatrix(rng, kernels.BF16, 96, 128) // 96·128/(2·224) ≈ 27 FLOPs a byte: the GPU's
	w.Key = kernels.NewKey()
	x := conformance.RandVec(rng, 4*128)
	plain := make([]float32, 4*96)
	b.MatMul(plain, kernels.Matrix{DType: w.DType, Rows: w.Rows, Cols: w.Cols, Data: w.Data}, x, 4) // unkeyed: copied per call

	require.True(t, kernels.Preload(auto, w))
	size := int64(len(w.Data) + len(w.Scales))
	require.Equal(t, size, b.ResidentBytes())
	up, _ := b.Uploaded()
	got := make([]float32, 4*96)
	auto.MatMul(got, w, x, 4)
	after, _ := b.Uploaded()
	require.Equal(t, up, after, "the product found it on the device")
	require.Equal(t, plain, got)

	narrow := conformance.RandMatrix(rng, kernels.BF16, 8, 128) // 8·128/(2·136) ≈ 4, 2 KiB: the CPU's in a prompt and in decode
	narrow.Key = kernels.NewKey()
	require.True(t, kernels.Preload(auto, narrow))
	require.Equal(t, size, b.ResidentBytes(), "a matrix the rule keeps on the CPU is not copied")

	b.SetResidentBudget(size + 100)
	big := conformance.RandMatrix(rng, kernels.BF16, 96, 128)
	big.Key = kernels.NewKey()
	require.False(t, kernels.Preload(auto, big), "no room: the preload stops")
	require.Equal(t, size, b.ResidentBytes(), "and evicts nothing")
	require.NoError(t, b.Err())
}

// A resident product in pieces of positions, each a call on the
// Pipeliner's frames, gives the bits of the same product as one call: in
// one row block and in several, with the small tiles and with the big
// ones (chosen for the whole call), the last position never alone.
func TestResidentProductInPiecesIsTheWholeCall(t *testing.T) {
	device(t)
	rng := rand.New(rand.NewPCG(25, 26))
	for _, dt := range []kernels.DType{kernels.BF16, kernels.I8, kernels.MXFP4, kernels.F16} {
		w := conformance.RandMatrix(rng, dt, 300, 256)
		w.Key = kernels.NewKey()
		for _, c := range []struct {
			name         string
			dev          gpu.Device
			n, piece, mm int
		}{
			{"one block", sharedDev, 7, 2, 0},
			// Blocks of at least 49 rows, each binding still holding the
			// 9 positions' outputs (MXFP4: 84 rows).
			{"row blocks", limited{sharedDev, max(49*len(w.Data)/300, 4*9*300)}, 9, 3, 0},
			{"big tiles", sharedDev, 100, 40, 1},
		} {
			t.Run(fmt.Sprintf("%s/%s", dt, c.name), func(t *testing.T) {
				whole, piped := gpu.New("vulkan", c.dev, nil), gpu.New("vulkan", c.dev, nil)
				whole.SetPositionPiece(-1)
				piped.SetPositionPiece(c.piece)
				if c.mm > 0 {
					whole.SetBigTileMinGroups(c.mm)
					piped.SetBigTileMinGroups(c.mm)
				}
				x := conformance.RandVec(rng, c.n*256)
				want, got := make([]float32, c.n*300), make([]float32, c.n*300)
				whole.MatMul(want, w, x, c.n)
				require.Zero(t, whole.PipelinedCalls(), "one call")
				piped.MatMul(got, w, x, c.n)
				require.Equal(t, want, got)
				require.GreaterOrEqual(t, piped.PipelinedCalls(), int64(c.n/c.piece), "a call a piece")
				ref := make([]float32, c.n*300)
				kernels.Ref().MatMul(ref, w, x, c.n)
				conformance.RequireWithin(t, ref, got, conformance.MatMulTol(w, x, c.n), dt.String())
				require.NoError(t, whole.Err())
				require.NoError(t, piped.Err())
			})
		}
	}
}

// Products over one input (kernels.MatMulShared) give the bits of each
// product alone: as one call a piece of positions (the pieces' calls
// counted once for them all, not once a product), as one call with no
// Pipeliner (pipelining off, as on Metal), over more products than one
// call takes (two calls), and one by one when a matrix is not resident.
func TestMatMulSharedIsEachProduct(t *testing.T) {
	device(t)
	rng := rand.New(rand.NewPCG(27, 28))
	var ws []kernels.Matrix
	for i, dt := range []kernels.DType{kernels.BF16, kernels.I8, kernels.MXFP4, kernels.F16, kernels.BF16, kernels.I8, kernels.MXFP4, kernels.F16, kernels.BF16} {
		w := conformance.RandMatrix(rng, dt, 64+37*i, 256)
		w.Key = kernels.NewKey()
		ws = append(ws, w)
	}
	run := func(b *gpu.Backend, ws []kernels.Matrix, x []float32, n int) [][]float32 {
		dst := make([][]float32, len(ws))
		for j, w := range ws {
			dst[j] = make([]float32, n*w.Rows)
		}
		kernels.MatMulShared(b, dst, ws, x, n)
		require.NoError(t, b.Err())
		return dst
	}
	for _, c := range []struct {
		name     string
		products int
		n, piece int
		chunk    int   // SetPipelineChunk
		streamed bool  // the last matrix has no key
		calls    int64 // pipelined calls the products took
	}{
		{"pieces", 3, 40, 16, 0, false, 3},
		{"more pieces than frames", 3, 80, 16, 0, false, 5}, // each slot set used twice, two input slots too
		{"one piece", 3, 5, 16, 0, false, 1},
		{"no pipeliner", 4, 40, 16, -1, false, 0},
		{"two calls", 9, 40, 16, 0, false, 6},
		{"one position", 3, 1, 16, 0, false, 0},
		{"one not resident", 3, 40, 16, 0, true, 6},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws := append([]kernels.Matrix(nil), ws[:c.products]...)
			if c.streamed {
				ws[len(ws)-1].Key = 0
			}
			x := conformance.RandVec(rng, c.n*256)
			each, shared := gpu.New("vulkan", sharedDev, nil), gpu.New("vulkan", sharedDev, nil)
			each.SetPositionPiece(c.piece)
			shared.SetPositionPiece(c.piece)
			shared.SetPipelineChunk(c.chunk)
			want := make([][]float32, len(ws))
			for j, w := range ws {
				want[j] = make([]float32, c.n*w.Rows)
				each.MatMul(want[j], w, x, c.n)
			}
			require.NoError(t, each.Err())
			got := run(shared, ws, x, c.n)
			require.Equal(t, want, got)
			require.Equal(t, c.calls, shared.PipelinedCalls(), "the calls the products took")
			for j, w := range ws {
				ref := make([]float32, c.n*w.Rows)
				kernels.Ref().MatMul(ref, w, x, c.n)
				conformance.RequireWithin(t, ref, got[j], conformance.MatMulTol(w, x, c.n), w.DType.String())
			}
		})
	}
}

// TestSpansFollowTheSemaphores: a traced product in pieces leaves one span
// a piece, and each span is in the order its semaphores impose (operands'
// copies, the compute queue taking the call up, shaders, copies back);
// without the trace none is kept, and untimed calls keep none. Both ways
// of resetting the timestamps: by the host (a Vulkan 1.2 device, lavapipe)
// and by each call's commands (an older one).
func TestSpansFollowTheSemaphores(t *testing.T) {
	device(t)
	for _, host := range []bool{false, true} {
		t.Run(fmt.Sprintf("host resets=%v", host), func(t *testing.T) {
			if err := sharedDev.hostResets(host); err != nil {
				t.Skipf("the device's timestamps: %v", err)
			}
			spansFollowTheSemaphores(t)
		})
	}
}

func spansFollowTheSemaphores(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 30))
	w := conformance.RandMatrix(rng, kernels.BF16, 300, 256)
	w.Key = kernels.NewKey()
	const n = 48
	x, y := conformance.RandVec(rng, n*256), make([]float32, n*300)
	b := gpu.New("vulkan", sharedDev, nil)
	b.SetPositionPiece(16)
	b.MatMul(y, w, x, n) // the weights' upload, before the trace
	require.True(t, b.Trace(true), "the Vulkan device keeps spans")
	b.MatMul(y, w, x, n)
	spans := b.Spans()
	require.Len(t, spans, n/16, "a span a piece")
	for i, s := range spans {
		seq := []time.Duration{s.CopiesIn[0], s.CopiesIn[1], s.Start, s.Shaders[0], s.Shaders[1], s.CopiesBack[0], s.CopiesBack[1]}
		require.Positive(t, s.Shaders[1], "piece %d: its shaders were timed", i)
		require.IsNonDecreasing(t, seq, "piece %d: copies in, the compute queue's start after their semaphore, shaders, copies back", i)
		if i > 0 {
			require.GreaterOrEqual(t, s.Shaders[0], spans[i-1].Shaders[1], "piece %d: its shaders after the piece before's", i)
		}
	}
	require.Empty(t, b.Spans(), "handed over once")
	b.Trace(false)
	b.MatMul(y, w, x, n)
	require.Empty(t, b.Spans(), "none kept with the trace off")

	// Untimed calls keep no span and add no time; timed ones, after them,
	// stamp queries the switch reset (the validation layer holds a
	// timestamp to an unreset query, TestCallsPassSyncValidation).
	require.NoError(t, sharedDev.Timing(false))
	defer func() { require.NoError(t, sharedDev.Timing(true)) }()
	sh, cp, ok := sharedDev.DeviceTimes()
	require.True(t, ok)
	b.Trace(true)
	b.MatMul(y, w, x, n)
	require.Empty(t, b.Spans(), "none kept by untimed calls")
	sh2, cp2, _ := sharedDev.DeviceTimes()
	require.Equal(t, [2]time.Duration{sh, cp}, [2]time.Duration{sh2, cp2}, "untimed calls add no time")
	require.NoError(t, sharedDev.Timing(true))
	b.MatMul(y, w, x, n)
	spans = b.Spans()
	b.Trace(false)
	require.Len(t, spans, n/16, "timed again: a span a piece")
	for i, s := range spans {
		require.IsNonDecreasing(t, []time.Duration{s.CopiesIn[1], s.Start, s.Shaders[0], s.Shaders[1]}, "piece %d, timed again", i)
	}
	require.NoError(t, b.Err())
}

// BenchmarkResidentPieces times a K3-sized resident product (12288×7168
// BF16, the KDA's and MLA's widest), alone and as four products over one
// input, at 256 positions in pieces, and reports from the last call's
// spans where the device's time went: head (the first piece's copies in,
// before any shader), gaps (the device idle between one piece's shaders
// and the next's), tail (the last piece's copies back after the last
// shader), and the shaders' share of the call on the device's clock. With
// -test.v it logs each piece's span (µs from the call's first copy).
func BenchmarkResidentPieces(b *testing.B) {
	dev := device(b)
	rng := rand.New(rand.NewPCG(31, 32))
	const rows, cols, n = 12288, 7168, 256
	var ws []kernels.Matrix
	for range 4 {
		w := conformance.RandMatrix(rng, kernels.BF16, rows, cols)
		w.Key = kernels.NewKey()
		ws = append(ws, w)
	}
	x := conformance.RandVec(rng, n*cols)
	for _, products := range []int{1, 4} {
		for _, timed := range []bool{true, false} {
			b.Run(fmt.Sprintf("products=%d/timed=%v", products, timed), func(b *testing.B) {
				residentPieces(b, dev, ws[:products], x, n, timed)
			})
		}
	}
}

// residentPieces is one case of BenchmarkResidentPieces: ws over x's n
// positions, the device's timestamps on or off (untimed: the call's
// GFLOP/s alone, what the timestamps cost it the difference).
func residentPieces(b *testing.B, dev *gpu.Backend, ws []kernels.Matrix, x []float32, n int, timed bool) {
	rows, cols := ws[0].Rows, ws[0].Cols
	dst := make([][]float32, len(ws))
	for j := range dst {
		dst[j] = make([]float32, n*rows)
	}
	call := func() { kernels.MatMulShared(dev, dst, ws, x, n) }
	call() // the uploads
	// The GPU's clocks are low after it idles: in a fresh process the
	// first case's shaders ran at a fifth of their speed on an H100
	// (fourteenth session). A warm-up of at least 0.3 s, whatever each
	// call takes (one call on lavapipe).
	for start := time.Now(); time.Since(start) < 300*time.Millisecond; {
		call()
	}
	if !timed {
		if err := sharedDev.Timing(false); err != nil {
			b.Skip(err)
		}
		defer func() {
			if err := sharedDev.Timing(true); err != nil {
				b.Error(err)
			}
		}()
	}
	b.ResetTimer()
	for range b.N {
		call()
	}
	b.StopTimer()
	flops := 2 * float64(len(ws)*rows*cols*n)
	b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	if !timed {
		return
	}
	if !dev.Trace(true) {
		b.Skip("the device keeps no spans")
	}
	call()
	spans := dev.Spans()
	dev.Trace(false)
	if err := dev.Err(); err != nil {
		b.Fatal(err)
	}
	if len(spans) == 0 {
		b.Fatal("no spans")
	}
	t0 := spans[0].CopiesIn[0]
	if t0 == 0 {
		t0 = spans[0].Shaders[0]
	}
	// A gap is the queue's turn (from the shaders before to the
	// moment the compute queue takes the call up) and the call's
	// preamble (from then to its first shader).
	var busy, gaps, queue time.Duration
	for i, s := range spans {
		busy += s.Shaders[1] - s.Shaders[0]
		if i > 0 {
			gap := max(0, s.Shaders[0]-spans[i-1].Shaders[1])
			gaps += gap
			queue += min(gap, max(0, s.Start-spans[i-1].Shaders[1]))
		}
		us := func(d time.Duration) float64 { return float64(d-t0) / 1e3 }
		b.Logf("piece %d: in %.0f–%.0f µs, start %.0f, shaders %.0f–%.0f, back %.0f–%.0f", i,
			us(s.CopiesIn[0]), us(s.CopiesIn[1]), us(s.Start), us(s.Shaders[0]), us(s.Shaders[1]), us(s.CopiesBack[0]), us(s.CopiesBack[1]))
	}
	last := spans[len(spans)-1]
	end := max(last.CopiesBack[1], last.Shaders[1])
	b.ReportMetric(float64(spans[0].Shaders[0]-t0)/1e3, "head-µs")
	b.ReportMetric(float64(gaps)/1e3, "gaps-µs")
	b.ReportMetric(float64(queue)/1e3, "gaps-queue-µs")
	b.ReportMetric(float64(end-last.Shaders[1])/1e3, "tail-µs")
	b.ReportMetric(float64(busy)/float64(end-t0), "shaders/device")
	b.ReportMetric(flops/busy.Seconds()/1e9, "shader-GFLOP/s")
	b.ReportMetric(float64(len(spans)), "pieces")
}
