package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMXFP4DecodeBitExact checks every (code, scale) pair against the
// definition W = e2m1(code)·2^(s−127) (docs/MODEL.md §4.4), bit for bit
// and so with the sign of zero: code 8 is −0. Scale 255 is NaN (OCP MX).
func TestMXFP4DecodeBitExact(t *testing.T) {
	t.Parallel()
	mags := [8]float64{0, 0.5, 1, 1.5, 2, 3, 4, 6}
	// One row per scale byte; its 32 columns hold every code twice (low and
	// high nibble positions).
	w := Matrix{DType: MXFP4, Rows: 256, Cols: 32, Data: make([]byte, 256*16), Scales: make([]byte, 256)}
	for s := range 256 {
		w.Scales[s] = byte(s)
		for j := range 16 {
			w.Data[16*s+j] = byte(j) | byte(15-j)<<4
		}
	}
	require.NoError(t, w.Validate())
	decoders := map[string]func([]float32, Matrix, int){"DecodeRow": DecodeRow}
	for _, b := range fastBackends(t, 1) {
		decoders[b.Name()] = b.(*fastBackend).decodeRow
	}
	for name, decode := range decoders {
		t.Run(name, func(t *testing.T) {
			row := make([]float32, 32)
			for s := range 256 {
				decode(row, w, s)
				for c := range 32 {
					code := c / 2
					if c%2 == 1 {
						code = 15 - c/2
					}
					want := math.Ldexp(mags[code&7], s-127)
					if code >= 8 {
						want = -want
					}
					if s == 255 {
						require.True(t, math.IsNaN(float64(row[c])), "scale 255 code %d", code)
						continue
					}
					require.Equalf(t, math.Float32bits(float32(want)), math.Float32bits(row[c]),
						"scale %d code %d: want %g got %g", s, code, want, row[c])
				}
			}
		})
	}
	require.Equal(t, uint32(0x80000000), math.Float32bits(E2M1(8)), "code 8 is negative zero")
	require.Equal(t, float32(math.Ldexp(1, -127)), E8M0(0))
}

// The C decoders of the other dtypes (used for prefill) must widen exactly.
func TestFastDecodeBitExact(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(11, 12))
	for _, dt := range []DType{F32, BF16, F16, I8} {
		w := randMatrix(rng, dt, 3, 4099)
		if dt == F16 {
			// Every half code, infinities and NaNs included.
			w = Matrix{DType: F16, Rows: 1, Cols: 65536, Data: make([]byte, 2*65536)}
			for i := range 65536 {
				binary.LittleEndian.PutUint16(w.Data[2*i:], uint16(i))
			}
		}
		for _, b := range fastBackends(t, 1) {
			t.Run(b.Name()+"/"+dt.String(), func(t *testing.T) {
				want := make([]float32, w.Cols)
				got := make([]float32, w.Cols)
				for r := range w.Rows {
					DecodeRow(want, w, r)
					b.(*fastBackend).decodeRow(got, w, r)
					for c := range want {
						if math.IsNaN(float64(want[c])) {
							require.True(t, math.IsNaN(float64(got[c])), "column %d", c)
							continue
						}
						require.Equalf(t, math.Float32bits(want[c]), math.Float32bits(got[c]), "row %d column %d", r, c)
					}
				}
			})
		}
	}
}
