package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

var allDTypes = []DType{F32, BF16, F16, I8, MXFP4}

// Exported for conformance_test.go (package kernels_test, which imports
// package conformance: an in-package test cannot, conformance imports
// kernels).
var (
	AllDTypes    = allDTypes
	FastBackends = fastBackends
)

// randMatrix fills a matrix with values of the size real weights have. Every
// dtype gets its full range of codes that matter: F16 includes subnormals,
// MXFP4 every nibble (negative zero too), with scales in a 16-value window
// as in the checkpoint (docs/MODEL.md §4.3).
func randMatrix(rng *rand.Rand, dt DType, rows, cols int) Matrix {
	m := Matrix{DType: dt, Rows: rows, Cols: cols}
	n := rows * cols
	switch dt {
	case F32:
		m.Data = make([]byte, 4*n)
		for i := range n {
			binary.LittleEndian.PutUint32(m.Data[4*i:], math.Float32bits(float32(rng.NormFloat64()*0.05)))
		}
	case BF16:
		m.Data = make([]byte, 2*n)
		// Random sign and mantissa, exponent 2^-8..2^-2: cheap enough for
		// the 1.2-billion-element lm_head.
		for i := 0; i < n; i += 2 {
			r := rng.Uint64()
			for k := 0; k < 2 && i+k < n; k++ {
				v := uint16(r>>(32*k)) & 0x807f
				v |= uint16(119+(r>>(32*k+16))%7) << 7
				binary.LittleEndian.PutUint16(m.Data[2*(i+k):], v)
			}
		}
	case F16:
		m.Data = make([]byte, 2*n)
		for i := range n {
			h := uint16(rng.Uint32())
			if (h>>10)&0x1f == 0x1f || (h>>10)&0x1f > 16 { // no inf/NaN, and keep |v| ≤ 4
				h &^= 0x4000
			}
			binary.LittleEndian.PutUint16(m.Data[2*i:], h)
		}
	case I8:
		m.Data = make([]byte, n)
		for i := range m.Data {
			m.Data[i] = byte(rng.Uint32())
		}
		m.Scales = make([]byte, 4*rows)
		for r := range rows {
			binary.LittleEndian.PutUint32(m.Scales[4*r:], math.Float32bits(float32(0.0005+0.001*rng.Float64())))
		}
	case MXFP4:
		m.Data = make([]byte, n/2)
		for i := range m.Data {
			m.Data[i] = byte(rng.Uint32())
		}
		m.Scales = make([]byte, n/MXFP4GroupSize)
		for i := range m.Scales {
			m.Scales[i] = byte(118 + rng.IntN(16))
		}
	}
	return m
}

func randVec(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}

// fastBackends returns every C backend this CPU runs, at the given thread
// count (not from Available, which tests that register backends change).
func fastBackends(t *testing.T, threads int) []Backend {
	t.Helper()
	var out []Backend
	for _, isa := range fastISAs() {
		b, err := Open(isa.name, threads)
		require.NoError(t, err)
		out = append(out, b)
	}
	return out
}
