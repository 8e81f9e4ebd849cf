//go:build linux && cgo

package vulkan

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/deltafin/deltafin/kernels"
	"github.com/deltafin/deltafin/kernels/conformance"
	"github.com/stretchr/testify/require"
)

var (
	once   sync.Once
	shared *Backend
	openEr error
)

// device opens the backend once for the test binary (opening a Vulkan
// device compiles every pipeline: about a second on lavapipe).
func device(t *testing.T) *Backend {
	t.Helper()
	once.Do(func() { shared, openEr = Open() })
	require.NoError(t, openEr, "make deps installs mesa-vulkan-drivers (lavapipe)")
	return shared
}

func requireWithin(t *testing.T, want, got []float32, tol []float64, what string) {
	t.Helper()
	require.Len(t, got, len(want))
	if i := conformance.Worst(want, got, tol); i >= 0 {
		require.Failf(t, "vulkan differs from ref", "%s: element %d: ref %g, vulkan %g, tol %g", what, i, want[i], got[i], tol[i])
	}
}

func TestMatMulMatchesRef(t *testing.T) {
	b := device(t)
	t.Logf("device %q (%s, Vulkan %s)", b.Info().Name, b.Info().Type, b.Info().API)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, dt := range []kernels.DType{kernels.F32, kernels.BF16, kernels.F16, kernels.I8, kernels.MXFP4} {
		colsList := []int{1, 7, 33, 257}
		if dt == kernels.MXFP4 {
			colsList = []int{32, 96, 512}
		}
		for _, rows := range []int{1, 3, 65} {
			for _, cols := range colsList {
				for _, n := range []int{1, 3, 9} { // 9: two passes of 8 positions
					name := fmt.Sprintf("%s/%dx%d/n%d", dt, rows, cols, n)
					t.Run(name, func(t *testing.T) {
						w := conformance.RandMatrix(rng, dt, rows, cols)
						x := conformance.RandVec(rng, n*cols)
						want, got := make([]float32, n*rows), make([]float32, n*rows)
						kernels.Ref().MatMul(want, w, x, n)
						b.MatMul(got, w, x, n)
						requireWithin(t, want, got, conformance.MatMulTol(w, x, n), name)
					})
				}
			}
		}
	}
	require.NoError(t, b.Err())
}
