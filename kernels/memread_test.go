package kernels

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

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
		for _, threads := range []int{0, 1, 3, 8} {
			require.Equal(t, readBytesGo(buf[:n]), MemoryRead(buf[:n], threads), "%d bytes, %d threads", n, threads)
		}
	}
	require.Zero(t, MemoryRead(nil, 4))
}
