package testref

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/checkpoint/safetensors"
)

// A Tensor is one tensor of a safetensors file, its bytes read.
type Tensor struct {
	Name, DType string
	Shape       []int64
	Data        []byte
}

// All reads every tensor of the safetensors file at path, in file order.
func All(t testing.TB, path string) []Tensor {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	st, err := f.Stat()
	require.NoError(t, err)
	h, err := safetensors.Read(f, st.Size())
	require.NoError(t, err)
	out := make([]Tensor, 0, len(h.Tensors))
	for _, x := range h.Tensors {
		b := make([]byte, x.Size)
		_, err := f.ReadAt(b, x.Offset)
		require.NoError(t, err)
		out = append(out, Tensor{Name: x.Name, DType: x.DType, Shape: x.Shape, Data: b})
	}
	return out
}

// Lookup reads the tensor called name of the file at path.
func Lookup(t testing.TB, path, name string) Tensor {
	t.Helper()
	for _, x := range All(t, path) {
		if x.Name == name {
			return x
		}
	}
	t.Fatalf("testref: no tensor %s in %s", name, path)
	return Tensor{}
}

// F32s decodes little-endian float32 values.
func F32s(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// I64s decodes little-endian int64 values as ints.
func I64s(b []byte) []int {
	out := make([]int, len(b)/8)
	for i := range out {
		out[i] = int(int64(binary.LittleEndian.Uint64(b[8*i:])))
	}
	return out
}

// Floats reads an F32 or I64 tensor as float64 values.
func Floats(t testing.TB, path, name string) []float64 {
	t.Helper()
	x := Lookup(t, path, name)
	var out []float64
	switch x.DType {
	case "F32":
		for _, v := range F32s(x.Data) {
			out = append(out, float64(v))
		}
	case "I64":
		for _, v := range I64s(x.Data) {
			out = append(out, float64(v))
		}
	default:
		t.Fatalf("testref: %s in %s is %s, want F32 or I64", name, path, x.DType)
	}
	return out
}

// Ints reads an I64 tensor (token ids).
func Ints(t testing.TB, path, name string) []int {
	t.Helper()
	x := Lookup(t, path, name)
	require.Equal(t, "I64", x.DType, name)
	return I64s(x.Data)
}

// CopyModel copies the files of testdata's model name (../testdata/NAME
// from the test's package) into dir, made if missing, and returns dir: a
// copy a test may damage, or write a trace beside.
func CopyModel(t testing.TB, name, dir string) string {
	t.Helper()
	src := filepath.Join("..", "testdata", name)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	entries, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644))
	}
	return dir
}
