//go:build unix

package conformance

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/deltafin/deltafin/kernels"
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

// staysInside: W·x over weights and scales that end at a guard page, for
// row lengths that end mid-chunk and on a chunk's edge.
func staysInside(t *testing.T, bs []kernels.Backend) {
	var cases []matCase
	for _, dt := range allDTypes {
		for _, cols := range []int{32, 128, 160, 512, 640, 3584} {
			for _, n := range []int{1, 2, 9} { // 9: the blocked kernels
				cases = append(cases, matCase{dt, 3, cols, n})
			}
		}
	}
	parallel(t, len(cases), 5, func(i int) string { return cases[i].String() }, func(t *testing.T, rng *rand.Rand, i int) {
		checkMatMul(t, bs, rng, cases[i], func(w *kernels.Matrix) {
			w.Data = guarded(t, w.Data)
			if w.Scales != nil {
				w.Scales = guarded(t, w.Scales)
			}
		})
	})
}
