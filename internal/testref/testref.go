package testref

import (
	"encoding/binary"
	"math"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/checkpoint/safetensors"
)

// Tensor reads one tensor of the safetensors file at path: its dtype and raw
// bytes.
func Tensor(t testing.TB, path, name string) (string, []byte) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	st, err := f.Stat()
	require.NoError(t, err)
	h, err := safetensors.Read(f, st.Size())
	require.NoError(t, err)
	x, ok := h.Lookup(name)
	require.True(t, ok, name)
	b := make([]byte, x.Size)
	_, err = f.ReadAt(b, x.Offset)
	require.NoError(t, err)
	return x.DType, b
}

// Floats reads an F32 or I64 tensor as float64 values.
func Floats(t testing.TB, path, name string) []float64 {
	t.Helper()
	dtype, b := Tensor(t, path, name)
	var out []float64
	switch dtype {
	case "F32":
		for i := 0; i < len(b); i += 4 {
			out = append(out, float64(math.Float32frombits(binary.LittleEndian.Uint32(b[i:]))))
		}
	case "I64":
		for i := 0; i < len(b); i += 8 {
			out = append(out, float64(int64(binary.LittleEndian.Uint64(b[i:]))))
		}
	default:
		t.Fatalf("testref: %s in %s is %s, want F32 or I64", name, path, dtype)
	}
	return out
}

// Ints reads an I64 tensor (token ids).
func Ints(t testing.TB, path, name string) []int {
	t.Helper()
	dtype, b := Tensor(t, path, name)
	require.Equal(t, "I64", dtype, name)
	out := make([]int, len(b)/8)
	for i := range out {
		out[i] = int(int64(binary.LittleEndian.Uint64(b[8*i:])))
	}
	return out
}
