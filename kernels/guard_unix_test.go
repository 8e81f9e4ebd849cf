//go:build linux || darwin

package kernels_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/deltafin/deltafin/kernels"
	"github.com/deltafin/deltafin/kernels/conformance"
)

// guarded returns a copy of b that ends where an inaccessible page begins,
// so that a kernel reading one byte past it faults instead of reading
// whatever follows (the AVX-512 MXFP4 kernel loads each chunk at byte
// offsets 0–3, and must mask the over-read of a row's last chunk).
func guarded(t *testing.T, b []byte) []byte {
	t.Helper()
	page := unix.Getpagesize()
	n := (len(b) + page - 1) / page * page
	m, err := unix.Mmap(-1, 0, n+page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	require.NoError(t, err)
	t.Cleanup(func() { _ = unix.Munmap(m) })
	require.NoError(t, unix.Mprotect(m[n:], unix.PROT_NONE))
	out := m[n-len(b) : n : n]
	copy(out, b)
	return out
}

func TestMatVecStaysInsideItsBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	ref := kernels.Ref()
	for _, b := range kernels.FastBackends(t, 1) {
		for _, dt := range kernels.AllDTypes {
			for _, cols := range []int{32, 128, 160, 512, 640, 3584} {
				for _, n := range []int{1, 2} {
					name := fmt.Sprintf("%s/%s/3x%d/n%d", b.Name(), dt, cols, n)
					w := conformance.RandMatrix(rng, dt, 3, cols)
					w.Data = guarded(t, w.Data)
					if w.Scales != nil {
						w.Scales = guarded(t, w.Scales)
					}
					x := conformance.RandVec(rng, n*cols)
					want, got := make([]float32, 3*n), make([]float32, 3*n)
					ref.MatMul(want, w, x, n)
					b.MatMul(got, w, x, n)
					requireClose(t, want, got, conformance.AbsDot(w, x, n), cols, name)
				}
			}
		}
	}
}
