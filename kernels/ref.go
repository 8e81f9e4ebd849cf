package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Ref returns the pure-Go reference backend: one obvious loop per operation,
// fp32 accumulation in column order. It is the oracle the fast backends are
// tested against, and the engine's backend when built with CGO_ENABLED=0.
func Ref() Backend { return refBackend{} }

type refBackend struct{}

func (refBackend) Name() string { return "ref" }

func (r refBackend) MatVec(dst []float32, w Matrix, x []float32) { r.MatMul(dst, w, x, 1) }

func (refBackend) MatMul(dst []float32, w Matrix, x []float32, n int) {
	mustValid(w)
	checkMatMul(dst, w, x, n)
	row := make([]float32, w.Cols)
	for r := 0; r < w.Rows; r++ {
		DecodeRow(row, w, r)
		for t := 0; t < n; t++ {
			xt := x[t*w.Cols : (t+1)*w.Cols]
			var sum float32
			for c, v := range row {
				sum += v * xt[c]
			}
			dst[t*w.Rows+r] = sum
		}
	}
}

func (r refBackend) ExpertFFN(dst []float32, e Expert, act Activation, x []float32, n int) {
	checkFFN(dst, e, x, n)
	inter := e.W1.Rows
	g := make([]float32, n*inter)
	u := make([]float32, n*inter)
	r.MatMul(g, e.W1, x, n)
	r.MatMul(u, e.W3, x, n)
	for i := range g {
		g[i] = act.Apply(g[i], u[i])
	}
	r.MatMul(dst, e.W2, g, n)
}

// Apply returns act(g, u) in fp32, following the operation order of the
// reference implementations (docs/MODEL.md §5.9).
func (a Activation) Apply(g, u float32) float32 {
	sig := float32(1 / (1 + math.Exp(-float64(g))))
	switch a.Kind {
	case SiTU:
		capG := float32(math.Tanh(float64(g/a.Beta))) * a.Beta
		capU := float32(math.Tanh(float64(u/a.LinearBeta))) * a.LinearBeta
		return (capG * sig) * capU
	default:
		return g * sig * u
	}
}

// mustValid panics unless w's byte slices match its shape: the C kernels
// trust them, and an out-of-bounds read there would not panic but return
// garbage (the reference could read past a slice's length within its
// capacity). It costs a few comparisons per call.
func mustValid(w Matrix) {
	if err := w.Validate(); err != nil {
		panic(err.Error())
	}
}

func checkMatMul(dst []float32, w Matrix, x []float32, n int) {
	if len(x) < n*w.Cols || len(dst) < n*w.Rows {
		panic(fmt.Sprintf("kernels: MatMul %s [%d,%d] × %d: x has %d, dst has %d", w.DType, w.Rows, w.Cols, n, len(x), len(dst)))
	}
}

// e2m1 maps a 4-bit MXFP4 code to its value; code 8 is negative zero.
var e2m1 = [16]float32{
	0, 0.5, 1, 1.5, 2, 3, 4, 6,
	float32(math.Copysign(0, -1)), -0.5, -1, -1.5, -2, -3, -4, -6,
}

// E2M1 returns the value of a 4-bit MXFP4 element code.
func E2M1(code uint8) float32 { return e2m1[code&15] }

// E8M0 returns the value 2^(s−127) of an MXFP4 scale byte. 255 is NaN, as the
// OCP MX spec says; the real checkpoint never uses it.
func E8M0(s uint8) float32 {
	if s == 255 {
		return float32(math.NaN())
	}
	return float32(math.Ldexp(1, int(s)-127))
}

// BF16ToF32 widens a bfloat16 exactly.
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// F16ToF32 widens an IEEE half exactly, subnormals, infinities and NaN included.
func F16ToF32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp != 0:
		return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
	case mant == 0:
		return math.Float32frombits(sign)
	}
	// Subnormal half: value = mant·2^-24, exact in fp32.
	v := float32(mant) * (1.0 / (1 << 24))
	if sign != 0 {
		v = -v
	}
	return v
}

// DecodeRow widens row r of w into dst (len Cols), exactly for every dtype.
func DecodeRow(dst []float32, w Matrix, r int) {
	cols := w.Cols
	switch w.DType {
	case F32:
		b := w.Data[r*cols*4 : (r+1)*cols*4]
		for c := range dst[:cols] {
			dst[c] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*c:]))
		}
	case BF16:
		b := w.Data[r*cols*2 : (r+1)*cols*2]
		for c := range dst[:cols] {
			dst[c] = BF16ToF32(binary.LittleEndian.Uint16(b[2*c:]))
		}
	case F16:
		b := w.Data[r*cols*2 : (r+1)*cols*2]
		for c := range dst[:cols] {
			dst[c] = F16ToF32(binary.LittleEndian.Uint16(b[2*c:]))
		}
	case I8:
		b := w.Data[r*cols : (r+1)*cols]
		scale := math.Float32frombits(binary.LittleEndian.Uint32(w.Scales[4*r:]))
		for c := range dst[:cols] {
			dst[c] = float32(int8(b[c])) * scale
		}
	case MXFP4:
		b := w.Data[r*cols/2 : (r+1)*cols/2]
		s := w.Scales[r*cols/MXFP4GroupSize : (r+1)*cols/MXFP4GroupSize]
		for j, p := range b {
			scale := E8M0(s[2*j/MXFP4GroupSize])
			dst[2*j] = E2M1(p&15) * scale
			dst[2*j+1] = E2M1(p>>4) * scale
		}
	default:
		panic(fmt.Sprintf("kernels: DecodeRow of unknown dtype %s", w.DType))
	}
}
