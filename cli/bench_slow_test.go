//go:build slow

package cli

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/kernels"
)

// One quick pass over K3-sized matrices (the smallest buffer Bench allows,
// twice the largest matrix): checks the JSON that issue #5 specifies and the
// table; the figures themselves come from `deltafin bench kernels`.
func TestBenchKernelsOutput(t *testing.T) {
	t.Parallel()
	opt := BenchKernelsOptions{JSON: true, BufferBytes: 1, MinTime: time.Nanosecond, GPUShrink: 64}
	cfg, out, rep := benchKernelsJSON(t, opt)
	require.Positive(t, rep.MemReadGBps)
	require.Positive(t, rep.FMAPeakGFLOPS)
	require.NotEmpty(t, rep.Kernels)
	seen := map[string]bool{}
	for _, k := range rep.Kernels {
		require.Positive(t, k.GBps, k.Name)
		require.InDelta(t, k.GBps/rep.MemReadGBps, k.Ratio, 1e-9)
		seen[k.Name] = true
	}
	for _, want := range []string{"matvec_BF16_12288x7168", "matvec_I8_12288x7168", "expert_ffn_mxfp4_3072x3584"} {
		require.True(t, seen[want], want)
	}
	var gpus struct {
		GPU []struct {
			Device  string  `json:"device"`
			Backend string  `json:"backend"`
			GPUPeak float64 `json:"gpu_peak_gflops"`
			Kernels []struct {
				Name            string  `json:"name"`
				GBps            float64 `json:"gbps"`
				GFLOPS          float64 `json:"gflops"`
				FLOPRatio       float64 `json:"flop_ratio"`
				DeviceGFLOPS    float64 `json:"device_gflops"`
				DeviceFLOPRatio float64 `json:"device_flop_ratio"`
				DeviceCopyShare float64 `json:"device_copy_share"`
			} `json:"kernels"`
		} `json:"gpu"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &gpus))
	require.Len(t, gpus.GPU, len(kernels.Registered()), "one report per GPU backend present")
	for _, g := range gpus.GPU {
		require.NotEmpty(t, g.Device, g.Backend)
		require.NotEmpty(t, g.Kernels, g.Backend)
		require.Positive(t, g.GPUPeak, "the GPU's own FMA peak, %s", g.Backend)
		timed := 0
		for _, k := range g.Kernels {
			require.Positive(t, k.GBps, k.Name)
			require.InDelta(t, k.GFLOPS/g.GPUPeak, k.FLOPRatio, 1e-9, "%s: against the GPU's peak", k.Name)
			if k.DeviceGFLOPS > 0 {
				// The shaders' best pass is no longer than the call's.
				timed++
				require.GreaterOrEqual(t, k.DeviceGFLOPS, k.GFLOPS*(1-1e-9), k.Name)
				require.InDelta(t, k.DeviceGFLOPS/g.GPUPeak, k.DeviceFLOPRatio, 1e-9, k.Name)
				require.True(t, k.DeviceCopyShare >= 0 && k.DeviceCopyShare < 1, "%s: copies' share %g", k.Name, k.DeviceCopyShare)
			}
		}
		require.Positive(t, timed, "%s: the device timed its shaders", g.Backend)
	}

	out.Reset()
	opt.JSON = false
	require.NoError(t, benchKernels(t.Context(), cfg, out, opt))
	require.Contains(t, out.String(), "memory read")
	require.Contains(t, out.String(), "expert_ffn_mxfp4_3072x3584")
	for _, g := range gpus.GPU {
		require.Contains(t, out.String(), "backend "+g.Backend+" on "+g.Device)
	}
}
