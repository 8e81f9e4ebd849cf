package kernels

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBenchReportsEveryKernelAgainstTheMeasuredLimit(t *testing.T) {
	rep, err := Bench(t.Context(), BenchOptions{BufferBytes: 16 << 20, MinTime: time.Millisecond, Shrink: 64, Threads: 2})
	require.NoError(t, err)
	require.Equal(t, Default().Name(), rep.Backend)
	require.Positive(t, rep.MemReadGBps)
	require.Positive(t, rep.MemReadOneGBps)
	require.GreaterOrEqual(t, rep.BufferBytes, 16<<20)
	names := map[string]int{}
	for _, k := range rep.Kernels {
		require.Positive(t, k.GBps, k.Name)
		require.InDelta(t, k.GBps/rep.MemReadGBps, k.Ratio, 1e-9, k.Name)
		names[k.Name] += k.Threads
	}
	require.Len(t, names, 9, "seven matrix kernels, the fused expert and a layer of them; no resident ones on a CPU backend")
	all, err := Open("auto", 2)
	require.NoError(t, err)
	for name, threads := range names {
		require.Equal(t, Threads(all)+1, threads, "%s measured with all threads and with one", name)
	}
}

// On a GPU backend the resident cases run too, with keyed matrices.
func TestBenchResidentCasesOnANonCPUBackend(t *testing.T) {
	var calls []int
	Register("benchgpu", func() (Backend, error) { return Split(counting{Ref(), &calls}, Ref()), nil })
	defer unregister("benchgpu")
	rep, err := Bench(t.Context(), BenchOptions{Backend: "benchgpu", BufferBytes: 16 << 20, MinTime: time.Millisecond, Shrink: 64, Threads: 2})
	require.NoError(t, err)
	var resident int
	for _, k := range rep.Kernels {
		if strings.HasSuffix(k.Name, "_resident") {
			resident++
		}
	}
	require.Equal(t, 2*5, resident, "five resident cases, all threads and one")
}

// The memory read must read every byte it is given (its sum is the proof),
// whichever instruction set's loop the build selected.
func TestMemoryReadSumsEveryWord(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	buf := make([]byte, 1<<20+384)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	for _, n := range []int{128, 256, 384, 4096, 4096 + 128, 1 << 20, 1<<20 + 384} {
		require.Equal(t, readBytesGo(buf[:n]), readBytes(buf[:n]), "%d bytes", n)
	}
}
