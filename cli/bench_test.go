package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/app"
)

// The matmuls at a shrunk size: the JSON carries the FMA peak of the run
// and every matmul's GFLOP/s and flop_ratio beside its memory ratio, and
// the table shows them.
func TestBenchKernelsFLOPRatios(t *testing.T) {
	t.Parallel()
	cfg := app.DefaultConfig(func(string) string { return "" })
	require.NoError(t, cfg.Validate())
	opt := BenchKernelsOptions{JSON: true, BufferBytes: 16 << 20, MinTime: time.Millisecond, Shrink: 64, NoGPU: true, Only: "mat"}
	var out bytes.Buffer
	require.NoError(t, benchKernels(t.Context(), cfg, &out, opt))
	var rep struct {
		MemReadGBps   float64 `json:"mem_read_gbps"`
		FMAPeakGFLOPS float64 `json:"fma_peak_gflops"`
		Kernels       []struct {
			Name      string  `json:"name"`
			GBps      float64 `json:"gbps"`
			Ratio     float64 `json:"ratio"`
			GFLOPS    float64 `json:"gflops"`
			FLOPRatio float64 `json:"flop_ratio"`
		} `json:"kernels"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &rep))
	require.Positive(t, rep.FMAPeakGFLOPS)
	require.NotEmpty(t, rep.Kernels)
	for _, k := range rep.Kernels {
		require.InDelta(t, k.GBps/rep.MemReadGBps, k.Ratio, 1e-9, k.Name)
		require.Positive(t, k.GFLOPS, k.Name)
		require.InDelta(t, k.GFLOPS/rep.FMAPeakGFLOPS, k.FLOPRatio, 1e-9, k.Name)
	}

	out.Reset()
	opt.JSON = false
	require.NoError(t, benchKernels(t.Context(), cfg, &out, opt))
	require.Contains(t, out.String(), "fp32 FMA peak")
	require.Contains(t, out.String(), "ratio to FMA peak")
	require.True(t, strings.Contains(out.String(), "matmul_BF16_192x7168_t64"), out.String())
}
