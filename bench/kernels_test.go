package bench

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/kernels"
)

func TestBenchReportsEveryKernelAgainstTheMeasuredLimit(t *testing.T) {
	t.Parallel()
	rep, err := Kernels(t.Context(), KernelsOptions{BufferBytes: 16 << 20, MinTime: time.Millisecond, Shrink: 64, Threads: 2})
	require.NoError(t, err)
	require.Equal(t, kernels.Default().Name(), rep.Backend)
	require.Positive(t, rep.MemReadGBps)
	require.Positive(t, rep.MemReadOneGBps)
	require.GreaterOrEqual(t, rep.BufferBytes, 16<<20)
	require.Positive(t, rep.FMAPeakGFLOPS)
	names := map[string]int{}
	for _, k := range rep.Kernels {
		require.Positive(t, k.GBps, k.Name)
		require.InDelta(t, k.GBps/rep.MemReadGBps, k.Ratio, 1e-9, k.Name)
		if strings.HasPrefix(k.Name, "mat") {
			// 2·rows·cols·positions operations per call of rows·cols weights.
			require.Positive(t, k.GFLOPS, k.Name)
			require.InDelta(t, k.GFLOPS/rep.FMAPeakGFLOPS, k.FLOPRatio, 1e-9, k.Name)
			require.InEpsilon(t, matFLOPsPerByte(t, k.Name), k.GFLOPS/k.GBps, 1e-9, k.Name)
		} else if strings.HasPrefix(k.Name, "attention_") || strings.HasPrefix(k.Name, "latent_") ||
			strings.HasPrefix(k.Name, "expert_ffn_") && strings.Contains(k.Name, "_t") ||
			strings.HasPrefix(k.Name, "expert_group_ffn_") {
			require.Positive(t, k.FLOPRatio, k.Name) // the expert FFN in prefill
		} else {
			require.Zero(t, k.FLOPRatio, k.Name)
		}
		names[k.Name] += k.Threads
	}
	require.Len(t, names, 33, "fifteen matrix kernels, the fused expert at one position and at 16, 24, 32, 64, 256 and 512, a prompt's group of them, a layer of them, attention at three lengths and the latent attention whole and in steps at three; no resident ones on a CPU backend")
	all, err := kernels.Open("auto", 2)
	require.NoError(t, err)
	for name, threads := range names {
		require.Equal(t, kernels.Threads(all)+1, threads, "%s measured with all threads and with one", name)
	}
}

// On a GPU backend the resident cases run too, with keyed matrices.
func TestBenchResidentCasesOnANonCPUBackend(t *testing.T) {
	t.Parallel()
	// Not a CPU backend to kernels.IsCPU: the reference on both sides of a Split.
	kernels.Register("benchgpu", func() (kernels.Backend, error) { return kernels.Split(kernels.Ref(), kernels.Ref()), nil })
	// Only the resident cases up to 64 positions: the reference's prefill
	// cases at 256 and 512 positions would take minutes.
	rep, err := Kernels(t.Context(), KernelsOptions{Backend: "benchgpu", BufferBytes: 16 << 20, MinTime: time.Millisecond, Shrink: 64, Threads: 2, Only: "_resident", MaxPositions: 64})
	require.NoError(t, err)
	var resident int
	for _, k := range rep.Kernels {
		if strings.HasSuffix(k.Name, "_resident") {
			resident++
		}
	}
	require.Equal(t, 2*5, resident, "five resident cases up to 64 positions, all threads and one")
}

// matFLOPsPerByte is a matmul case's operations per weight byte, from its
// name (matvec_DT_RxC or matmul_DT_RxC_tN).
func matFLOPsPerByte(t *testing.T, name string) float64 {
	var dt string
	var rows, cols, n int
	f := strings.Split(name, "_")
	_, err := fmt.Sscanf(f[2], "%dx%d", &rows, &cols)
	require.NoError(t, err, name)
	dt, n = f[1], 1
	if f[0] == "matmul" {
		_, err = fmt.Sscanf(f[3], "t%d", &n)
		require.NoError(t, err, name)
	}
	bytes := map[string]float64{"F32": 4, "BF16": 2, "F16": 2, "I8": 1 + 4/float64(cols), "MXFP4": 0.5 + 1.0/kernels.MXFP4GroupSize}[dt]
	require.NotZero(t, bytes, name)
	return 2 * float64(n) / bytes
}
