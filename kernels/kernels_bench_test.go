package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkMemRead and BenchmarkKernels (K3-sized matrices against the
// memory read) are package bench's, beside `deltafin bench kernels`.

// BenchmarkKernelsInCache runs each row kernel on one thread over a matrix
// small enough for L2 (128 rows of 3584): the arithmetic ceiling per core,
// to set beside one core's memory read. Where it is below, the kernel is
// compute-bound.
func BenchmarkKernelsInCache(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, dt := range allDTypes {
		w := randMatrix(rng, dt, 128, 3584)
		x := randVec(rng, 3584)
		dst := make([]float32, 128)
		for _, name := range Available() {
			be, err := Open(name, 1)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("%s/%s", dt, name), func(b *testing.B) {
				b.SetBytes(int64(len(w.Data) + len(w.Scales)))
				for b.Loop() {
					be.MatVec(dst, w, x)
				}
			})
		}
	}
}
