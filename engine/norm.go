package engine

import (
	"math"
)

// Elementwise operations of the forward pass, in fp32. Matrix products are
// the kernels' job; everything whose cost is the activations lives here.

// rmsNorm computes dst = w ⊙ (x · rsqrt(mean(x²) + eps)) over one vector, in
// the reference order: variance, normalise, then weight. w nil means no weight.
//
//	x, dst: [n]; w: [n] or nil
func rmsNorm(dst, x, w []float32, eps float32) {
	var ss float32
	for _, v := range x {
		ss += v * v
	}
	r := rsqrt(ss/float32(len(x)) + eps)
	for i, v := range x {
		n := v * r
		if w != nil {
			n = w[i] * n
		}
		dst[i] = n
	}
}

// rmsNormRows applies rmsNorm to each width-long row of x.
//
//	x, dst: [rows, width]; w: [width]
func rmsNormRows(dst, x, w []float32, eps float32, width int) {
	// Rows are independent: a prompt's are spread over the cores (each
	// row's arithmetic unchanged, so the bits do not depend on the split).
	rows := len(x) / width
	parallelHeads(rows, headSplit{}.workers(len(x)*2), func(r0, r1 int) {
		for o := r0 * width; o < r1*width; o += width {
			rmsNorm(dst[o:o+width], x[o:o+width], w, eps)
		}
	})
}

func rsqrt(v float32) float32 { return float32(1 / math.Sqrt(float64(v))) }

// l2Normalize scales x to unit length: x / max(‖x‖₂, 1e-12).
func l2Normalize(x []float32) {
	var ss float32
	for _, v := range x {
		ss += v * v
	}
	n := max(float32(math.Sqrt(float64(ss))), 1e-12)
	for i := range x {
		x[i] /= n
	}
}

// sigmoid is the logistic function 1/(1+e^−x) in fp32.
func sigmoid(x float32) float32 { return float32(1 / (1 + math.Exp(-float64(x)))) }

// softplus is log(1+e^x), linear above 20 as PyTorch's default threshold.
func softplus(x float32) float32 {
	if x > 20 {
		return x
	}
	return float32(math.Log1p(math.Exp(float64(x))))
}

// softmax normalises x in place: e^(x_i − max) / Σ e^(x_j − max). −Inf
// entries (masked) get weight 0.
func softmax(x []float32) {
	m := float32(math.Inf(-1))
	for _, v := range x {
		m = max(m, v)
	}
	var sum float32
	for i, v := range x {
		e := float32(math.Exp(float64(v - m)))
		x[i] = e
		sum += e
	}
	for i := range x {
		x[i] /= sum
	}
}

// add accumulates dst += x.
func add(dst, x []float32) {
	for i, v := range x {
		dst[i] += v
	}
}
