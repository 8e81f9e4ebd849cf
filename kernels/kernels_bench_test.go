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

// BenchmarkMatMulInCache runs the batched kernels on one thread over 256
// rows of 3584 (in L2 or L3 after the first call), n positions: the
// arithmetic ceiling of one core, as GFLOP/s (2·rows·cols·n a call) to set
// beside one core's FMA peak (BenchmarkFMALoop).
func BenchmarkMatMulInCache(b *testing.B) {
	rng := rand.New(rand.NewPCG(2, 2))
	for _, dt := range []DType{BF16, I8, MXFP4} {
		w := randMatrix(rng, dt, 256, 3584)
		for _, n := range []int{4, 8, 16, 64, 256} {
			x := randVec(rng, n*3584)
			dst := make([]float32, n*256)
			for _, name := range Available() {
				if name == "ref" {
					continue
				}
				be, err := Open(name, 1)
				if err != nil {
					b.Fatal(err)
				}
				b.Run(fmt.Sprintf("%s/n%d/%s", dt, n, name), func(b *testing.B) {
					for b.Loop() {
						be.MatMul(dst, w, x, n)
					}
					b.ReportMetric(2*float64(w.Rows*w.Cols*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				})
			}
		}
	}
}
