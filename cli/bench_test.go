package cli

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/app"
)

// benchReport is the part of `bench kernels --json` the tests read.
type benchReport struct {
	MemReadGBps   float64 `json:"mem_read_gbps"`
	FMAPeakGFLOPS float64 `json:"fma_peak_gflops"`
	Kernels       []struct {
		Name      string  `json:"name"`
		Threads   int     `json:"threads"`
		GBps      float64 `json:"gbps"`
		Ratio     float64 `json:"ratio"`
		GFLOPS    float64 `json:"gflops"`
		FLOPRatio float64 `json:"flop_ratio"`
	} `json:"kernels"`
}

// benchKernelsJSON runs bench kernels with opt (JSON set) and returns the
// configuration it ran with, its output and the report parsed from it.
func benchKernelsJSON(t *testing.T, opt BenchKernelsOptions) (app.Config, *bytes.Buffer, benchReport) {
	t.Helper()
	cfg := app.DefaultConfig(func(string) string { return "" })
	require.NoError(t, cfg.Validate())
	var out bytes.Buffer
	require.NoError(t, benchKernels(t.Context(), cfg, &out, opt))
	var rep benchReport
	require.NoError(t, json.Unmarshal(out.Bytes(), &rep))
	return cfg, &out, rep
}

// The matmuls at a shrunk size: the JSON carries the FMA peak of the run
// and every matmul's GFLOP/s and flop_ratio beside its memory ratio, and
// the table shows them.
func TestBenchKernelsFLOPRatios(t *testing.T) {
	t.Parallel()
	opt := BenchKernelsOptions{JSON: true, BufferBytes: 16 << 20, MinTime: time.Millisecond, Shrink: 64, NoGPU: true, Only: "mat"}
	cfg, out, rep := benchKernelsJSON(t, opt)
	require.Positive(t, rep.FMAPeakGFLOPS)
	require.NotEmpty(t, rep.Kernels)
	for _, k := range rep.Kernels {
		require.InDelta(t, k.GBps/rep.MemReadGBps, k.Ratio, 1e-9, k.Name)
		require.Positive(t, k.GFLOPS, k.Name)
		require.InDelta(t, k.GFLOPS/rep.FMAPeakGFLOPS, k.FLOPRatio, 1e-9, k.Name)
	}

	out.Reset()
	opt.JSON = false
	require.NoError(t, benchKernels(t.Context(), cfg, out, opt))
	require.Contains(t, out.String(), "fp32 FMA peak")
	require.Contains(t, out.String(), "ratio to FMA peak")
	require.True(t, strings.Contains(out.String(), "matmul_BF16_192x7168_t64"), out.String())
}

// `deltafin bench prefill` on k3-tiny, flags to JSON and table: a figure
// per length, each flop_ratio the length's GFLOP/s over the run's peak.
func TestBenchPrefillCommand(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	cfg := app.DefaultConfig(func(k string) string {
		if k == "DELTAFIN_HOME" {
			return home
		}
		return ""
	})
	run := func(args ...string) (string, string, error) {
		var out, errOut bytes.Buffer
		c := &Call{Config: cfg, Args: append([]string{"prefill"}, args...), Stdout: &out, Stderr: &errOut}
		err := Bench(t.Context(), c)
		return out.String(), errOut.String(), err
	}
	model := filepath.Join("..", "testdata", "k3-tiny")
	out, _, err := run("--model", model, "--tokens", "16,32", "--json")
	require.NoError(t, err)
	var rep struct {
		Model         string  `json:"model"`
		Backend       string  `json:"backend"`
		FMAPeakGFLOPS float64 `json:"fma_peak_gflops"`
		Lengths       []struct {
			Tokens     int     `json:"tokens"`
			Seconds    float64 `json:"seconds"`
			TokensPerS float64 `json:"tokens_per_s"`
			GFLOPS     float64 `json:"gflops"`
			FLOPRatio  float64 `json:"flop_ratio"`
		} `json:"lengths"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Equal(t, "deltafin-kimi-k3", rep.Model)
	require.NotEmpty(t, rep.Backend)
	require.Positive(t, rep.FMAPeakGFLOPS)
	require.Len(t, rep.Lengths, 2)
	for i, n := range []int{16, 32} {
		l := rep.Lengths[i]
		require.Equal(t, n, l.Tokens)
		require.InEpsilon(t, float64(n)/l.Seconds, l.TokensPerS, 1e-9)
		require.InDelta(t, l.GFLOPS/rep.FMAPeakGFLOPS, l.FLOPRatio, 1e-12)
	}

	out, _, err = run("--model", model, "--tokens", "16")
	require.NoError(t, err)
	require.Contains(t, out, "fp32 FMA peak")
	require.Contains(t, out, "ratio to FMA peak")

	for _, args := range [][]string{{"--tokens", "16"}, {"--model", model, "--tokens", "16,x"}, {"--model", model, "--tokens", "0"}} {
		_, stderr, err := run(args...)
		require.ErrorIs(t, err, errUsage, "%v", args)
		require.Contains(t, stderr, "Usage: deltafin", "%v", args)
	}
}
