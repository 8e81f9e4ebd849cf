package cli

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/app"
)

func benchCall(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cfg := app.DefaultConfig(func(string) string { return "" })
	cfg.DataDir = t.TempDir()
	var out, errOut bytes.Buffer
	err := Bench(t.Context(), &Call{Command: Command{Name: "bench"}, Config: cfg, Args: args, Stdout: &out, Stderr: &errOut})
	return out.String() + errOut.String(), err
}

func TestBenchProjectShowsEachTerm(t *testing.T) {
	t.Parallel()
	rates := filepath.Join("..", "testdata", "compute", "m1max-metal-fork.json")
	out, err := benchCall(t, "project", "--ram-gb", "64", "--drive-gbps", "6.6", "--compute", rates)
	require.NoError(t, err, out)
	for _, want := range []string{
		"K3 (93 layers, bf16 spine) in 64 GB of RAM, 1 drive(s) of 6.6 GB/s",
		"expected from disk per token: 91.7",
		"disk term: 13.90 s = max(91.73 GB ÷ 6.6 GB/s",
		"spine: 111.2 GB ÷ 283.0 GB/s = 0.39 s; experts: 25.8 GB ÷ 150.0 GB/s = 0.17 s",
		"projected: 13.90 s/token",
	} {
		require.Contains(t, out, want)
	}
	out, err = benchCall(t, "project", "--table", "--compute", rates)
	require.NoError(t, err, out)
	require.Contains(t, out, "| M5 Max 128 GB, 4 drives | int8 | 13.6 + 7.1 + 7.1 + 5.1 |")
	require.Contains(t, out, "| M3 Ultra 512 GB | bf16 |")
	_, err = benchCall(t, "project", "--drive-gbps", "fast")
	require.ErrorIs(t, err, errUsage)

	// Drafting: the 64 GB M1 Max's streamed spine is shared by the
	// positions of a pass, beside the original Deltafin's measured figures.
	out, err = benchCall(t, "project", "--ram-gb", "64", "--drive-gbps", "6.6", "--compute", rates, "--draft-accept", "0.6")
	require.NoError(t, err, out)
	require.Contains(t, out, "drafting at acceptance 0.60, union growth 0.69: T = 3 positions per pass, 1.96 tokens per pass")
	require.Contains(t, out, "projected: 9.84 s/token (1.41× the plain 13.90)")
	out, err = benchCall(t, "project", "--table", "--compute", rates, "--draft-accept", "0.6")
	require.NoError(t, err, out)
	require.Contains(t, out, "| M1 Max 64 GB | 13.90 | 3 | 1.96 | **9.84** | 1.41× | 11.38 → 5.62 s/token (2.02×, EAGLE-3.1) |")
	_, err = benchCall(t, "project", "--draft-accept", "1.5")
	require.ErrorIs(t, err, errUsage)
}

func TestBenchHeatReplaysTheTrace(t *testing.T) {
	t.Parallel()
	out, err := benchCall(t, "heat", "--model", filepath.Join("..", "testdata", "k3-tiny"),
		"--trace", filepath.Join("..", "testdata", "traces", "k3-tiny-france-256.jsonl"), "--cache", "288", "--half-life", "-1,16")
	require.NoError(t, err, out)
	// 2,358 trace lines (262 positions × 9 MoE layers) of top-4 each; the
	// hits are this cache policy's on the trace recorded from k3-tiny
	// (testdata/PROVENANCE.md), re-derived when the trace was.
	require.Contains(t, out, "288    cumulative  9432      9150  0.970")
	require.Contains(t, out, "288    16          9432      9150  0.970")
}

func TestBenchSliceDraftFlag(t *testing.T) {
	t.Parallel()
	got, err := parseOracleRates("oracle:0.3,0.6, 0.9")
	require.NoError(t, err)
	require.Equal(t, []float64{0.3, 0.6, 0.9}, got)
	for _, bad := range []string{"ngram", "oracle:", "oracle:0.3,2", "0.5"} {
		_, err := parseOracleRates(bad)
		require.Error(t, err, bad)
		require.Contains(t, err.Error(), "--draft", bad)
	}
}
