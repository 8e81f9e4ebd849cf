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

// TestSpansFollowTheSemaphores: a traced product in pieces leaves one span
// a piece, and each span is in the order its semaphores impose (operands'
// copies, then shaders, then copies back); without the trace none is kept.
func TestSpansFollowTheSemaphores(t *testing.T) {
	device(t)
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
		seq := []time.Duration{s.CopiesIn[0], s.CopiesIn[1], s.Shaders[0], s.Shaders[1], s.CopiesBack[0], s.CopiesBack[1]}
		require.Positive(t, s.Shaders[1], "piece %d: its shaders were timed", i)
		require.IsNonDecreasing(t, seq, "piece %d: copies in, shaders, copies back", i)
		if i > 0 {
			require.GreaterOrEqual(t, s.Shaders[0], spans[i-1].Shaders[1], "piece %d: its shaders after the piece before's", i)
		}
	}
	require.Empty(t, b.Spans(), "handed over once")
	b.Trace(false)
	b.MatMul(y, w, x, n)
	require.Empty(t, b.Spans(), "none kept with the trace off")
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
		b.Run(fmt.Sprintf("products=%d", products), func(b *testing.B) {
			dst := make([][]float32, products)
			for j := range dst {
				dst[j] = make([]float32, n*rows)
			}
			call := func() { kernels.MatMulShared(dev, dst, ws[:products], x, n) }
			call() // the uploads
			b.ResetTimer()
			for range b.N {
				call()
			}
			b.StopTimer()
			flops := 2 * float64(products*rows*cols*n)
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
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
			var busy, gaps time.Duration
			for i, s := range spans {
				busy += s.Shaders[1] - s.Shaders[0]
				if i > 0 {
					gaps += max(0, s.Shaders[0]-spans[i-1].Shaders[1])
				}
				us := func(d time.Duration) float64 { return float64(d-t0) / 1e3 }
				b.Logf("piece %d: in %.0f–%.0f µs, shaders %.0f–%.0f, back %.0f–%.0f", i,
					us(s.CopiesIn[0]), us(s.CopiesIn[1]), us(s.Shaders[0]), us(s.Shaders[1]), us(s.CopiesBack[0]), us(s.CopiesBack[1]))
			}
			last := spans[len(spans)-1]
			end := max(last.CopiesBack[1], last.Shaders[1])
			b.ReportMetric(float64(spans[0].Shaders[0]-t0)/1e3, "head-µs")
			b.ReportMetric(float64(gaps)/1e3, "gaps-µs")
			b.ReportMetric(float64(end-last.Shaders[1])/1e3, "tail-µs")
			b.ReportMetric(float64(busy)/float64(end-t0), "shaders/device")
			b.ReportMetric(flops/busy.Seconds()/1e9, "shader-GFLOP/s")
			b.ReportMetric(float64(len(spans)), "pieces")
		})
	}
}
