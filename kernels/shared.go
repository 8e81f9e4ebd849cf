package kernels

import "fmt"

// MatMulShared computes dst[j] = ws[j]·x for the n positions of x ([n,
// Cols], one Cols for every ws[j]; dst[j] is [n, ws[j].Rows]): a layer's
// products over one input, as the KDA's q, k, v, gate and decay
// projections over the normalised hidden state. Bit for bit MatMul of each.
// A backend that is a SharedMatMuler runs them as one call (a GPU: x
// crosses the bus once a piece of positions, the products' shaders run
// back to back, the copies back beside the next piece's: the activations
// stay on the device across the layer's products); any other one by one.
func MatMulShared(b Backend, dst [][]float32, ws []Matrix, x []float32, n int) {
	if len(dst) != len(ws) {
		panic(fmt.Sprintf("kernels: MatMulShared: %d products, %d outputs", len(ws), len(dst)))
	}
	for _, w := range ws[min(1, len(ws)):] {
		if w.Cols != ws[0].Cols {
			panic(fmt.Sprintf("kernels: MatMulShared: inputs of %d and %d columns", ws[0].Cols, w.Cols))
		}
	}
	if m, ok := b.(SharedMatMuler); ok {
		m.MatMulShared(dst, ws, x, n)
		return
	}
	for j, w := range ws {
		b.MatMul(dst[j], w, x, n)
	}
}

// A SharedMatMuler runs products over one input as one call
// (MatMulShared, whose contract it keeps).
type SharedMatMuler interface {
	MatMulShared(dst [][]float32, ws []Matrix, x []float32, n int)
}
