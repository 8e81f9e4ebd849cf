package conformance

import (
	"encoding/binary"
	"math"
	"math/rand/v2"

	"github.com/deltafin/deltafin/kernels"
)

// U is the unit roundoff of float32.
const U = 1.0 / (1 << 24)

// RandMatrix fills a matrix with values of the size real weights have: F16
// with subnormals, MXFP4 with every nibble (negative zero too) and scales in
// a 16-value window, as in the checkpoint.
func RandMatrix(rng *rand.Rand, dt kernels.DType, rows, cols int) kernels.Matrix {
	m := kernels.Matrix{DType: dt, Rows: rows, Cols: cols}
	n := rows * cols
	switch dt {
	case kernels.F32:
		m.Data = make([]byte, 4*n)
		for i := range n {
			binary.LittleEndian.PutUint32(m.Data[4*i:], math.Float32bits(float32(rng.NormFloat64()*0.05)))
		}
	case kernels.BF16:
		m.Data = make([]byte, 2*n)
		// Random sign and mantissa, exponent 2^-8..2^-2, two values per
		// draw: cheap enough for the 1.2-billion-element lm_head.
		for i := 0; i < n; i += 2 {
			r := rng.Uint64()
			for k := 0; k < 2 && i+k < n; k++ {
				v := uint16(r>>(32*k)) & 0x807f
				v |= uint16(119+(r>>(32*k+16))%7) << 7
				binary.LittleEndian.PutUint16(m.Data[2*(i+k):], v)
			}
		}
	case kernels.F16:
		m.Data = make([]byte, 2*n)
		for i := range n {
			h := uint16(rng.Uint32())
			if (h>>10)&0x1f > 16 { // no inf/NaN, and keep |v| ≤ 4
				h &^= 0x4000
			}
			binary.LittleEndian.PutUint16(m.Data[2*i:], h)
		}
	case kernels.I8:
		m.Data = make([]byte, n)
		for i := range m.Data {
			m.Data[i] = byte(rng.Uint32())
		}
		m.Scales = make([]byte, 4*rows)
		for r := range rows {
			binary.LittleEndian.PutUint32(m.Scales[4*r:], math.Float32bits(float32(0.0005+0.001*rng.Float64())))
		}
	case kernels.MXFP4:
		m.Data = make([]byte, n/2)
		for i := range m.Data {
			m.Data[i] = byte(rng.Uint32())
		}
		m.Scales = make([]byte, n/kernels.MXFP4GroupSize)
		for i := range m.Scales {
			m.Scales[i] = byte(118 + rng.IntN(16))
		}
	}
	return m
}

// RandVec is n standard normal values.
func RandVec(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}

// AbsDot returns S[t*Rows+r] = Σ_c |W[r,c]·x_t[c]|, the scale of the
// rounding error of any summation order.
func AbsDot(w kernels.Matrix, x []float32, n int) []float64 {
	s := make([]float64, n*w.Rows)
	row := make([]float32, w.Cols)
	for r := range w.Rows {
		kernels.DecodeRow(row, w, r)
		for t := range n {
			var a float64
			for c, v := range row {
				a += math.Abs(float64(v) * float64(x[t*w.Cols+c]))
			}
			s[t*w.Rows+r] = a
		}
	}
	return s
}

// DotTol bounds |backend − ref| of one dot product of length cols whose
// terms have absolute sum s: 4·u·√cols·s (kernels/README.md). A wrong
// element, scale or nibble costs about s/cols, above this for cols < 26,000.
func DotTol(cols int, s float64) float64 { return 4*U*math.Sqrt(float64(cols))*s + 1e-30 }

// MatMulTol is DotTol for every element of W·x over n positions.
func MatMulTol(w kernels.Matrix, x []float32, n int) []float64 {
	s := AbsDot(w, x, n)
	for i := range s {
		s[i] = DotTol(w.Cols, s[i])
	}
	return s
}

// FFNTol bounds |backend − ref| of ExpertFFN elementwise: each gate/up dot
// product may be off by DotTol, carried through the activation with its
// partial derivatives, plus 16 ulps for exp/tanh; then W2 adds its own
// DotTol and the intermediate errors weighted by |W2|.
func FFNTol(e kernels.Expert, act kernels.Activation, x []float32, n int) []float64 {
	inter, dim := e.W1.Rows, e.W1.Cols
	g := make([]float32, n*inter)
	up := make([]float32, n*inter)
	kernels.Ref().MatMul(g, e.W1, x, n)
	kernels.Ref().MatMul(up, e.W3, x, n)
	sg, su := AbsDot(e.W1, x, n), AbsDot(e.W3, x, n)
	h := make([]float32, n*inter)
	dh := make([]float64, n*inter)
	for i := range h {
		h[i] = act.Apply(g[i], up[i])
		gv, uv := float64(g[i]), float64(up[i])
		sig := 1 / (1 + math.Exp(-gv))
		var lg, lu float64 // |∂act/∂g|, |∂act/∂u| bounds
		switch act.Kind {
		case kernels.SiTU:
			b, bl := float64(act.Beta), float64(act.LinearBeta)
			lg = math.Abs(bl*math.Tanh(uv/bl)) * (1 + b/4)
			lu = math.Abs(b * math.Tanh(gv/b) * sig)
		default:
			lg = 1.1 * math.Abs(uv)
			lu = math.Abs(gv * sig)
		}
		dh[i] = 2*(lg*DotTol(dim, sg[i])+lu*DotTol(dim, su[i])) + 16*U*math.Abs(float64(h[i])) + 1e-30
	}
	s2 := AbsDot(e.W2, h, n)
	tol := make([]float64, n*dim)
	row := make([]float32, inter)
	for d := range dim {
		kernels.DecodeRow(row, e.W2, d)
		for t := range n {
			var prop float64
			for c, v := range row {
				prop += math.Abs(float64(v)) * dh[t*inter+c]
			}
			tol[t*dim+d] = DotTol(inter, s2[t*dim+d]) + prop
		}
	}
	return tol
}

// Worst returns the first index where |want − got| exceeds tol (NaN
// counts), or −1.
func Worst(want, got []float32, tol []float64) int {
	for i := range want {
		if !(math.Abs(float64(want[i])-float64(got[i])) <= tol[i]) {
			return i
		}
	}
	return -1
}
