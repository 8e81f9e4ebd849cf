package safetensors

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func build(header string, data int) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, uint64(len(header)))
	b.WriteString(header)
	b.Write(make([]byte, data))
	return b.Bytes()
}

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		header  string
		data    int
		wantErr string
	}{
		{"ok", `{"__metadata__":{"format":"pt"},"a":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,12]},"b":{"dtype":"U8","shape":[4],"data_offsets":[12,16]}}`, 16, ""},
		{"scalar", `{"s":{"dtype":"F32","shape":[],"data_offsets":[0,4]}}`, 4, ""},
		{"truncated data", `{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`, 8, `"a"`},
		{"size mismatch", `{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,12]}}`, 16, "needs 16 bytes"},
		{"overlap", `{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}}`, 8, "overlaps"},
		{"bad dtype", `{"a":{"dtype":"Q4","shape":[4],"data_offsets":[0,4]}}`, 4, "unsupported dtype"},
		{"negative dim", `{"a":{"dtype":"U8","shape":[-4],"data_offsets":[0,4]}}`, 4, "negative"},
		{"overflow", `{"a":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,4]}}`, 4, "overflows"},
		{"bad offsets", `{"a":{"dtype":"U8","shape":[4],"data_offsets":[0]}}`, 4, "data_offsets"},
		{"not json", `{"a":`, 4, "header JSON"},
		{"bad metadata", `{"__metadata__":{"x":1}}`, 0, "__metadata__"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file := build(tc.header, tc.data)
			h, err := Read(bytes.NewReader(file), int64(len(file)))
			if tc.wantErr != "" {
				require.ErrorIs(t, err, ErrFormat)
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			for _, x := range h.Tensors {
				require.LessOrEqual(t, x.End(), int64(len(file)))
			}
		})
	}
}

func TestHeaderLengthBounds(t *testing.T) {
	var p [8]byte
	binary.LittleEndian.PutUint64(p[:], 1<<62)
	_, err := HeaderLength(p[:], 1<<40)
	require.ErrorIs(t, err, ErrFormat)
	binary.LittleEndian.PutUint64(p[:], 100)
	_, err = HeaderLength(p[:], 50)
	require.ErrorContains(t, err, "truncated")
	_, err = HeaderLength(p[:3], 50)
	require.True(t, errors.Is(err, ErrFormat))
}

func TestRealShard(t *testing.T) {
	path := filepath.Join("..", "..", "testdata", "k3-tiny", "model-00001-of-000004.safetensors")
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	st, err := f.Stat()
	require.NoError(t, err)
	h, err := Read(f, st.Size())
	require.NoError(t, err)
	require.NotEmpty(t, h.Tensors)
	_, ok := h.Lookup(h.Tensors[0].Name)
	require.True(t, ok)
}

func FuzzParse(f *testing.F) {
	f.Add(build(`{"a":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,12]}}`, 12))
	if b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "k3-tiny", "model-00004-of-000004.safetensors")); err == nil {
		n := binary.LittleEndian.Uint64(b)
		if n < 1<<16 {
			f.Add(b[:8+n+64])
		}
	}
	f.Fuzz(func(t *testing.T, file []byte) {
		h, err := Read(bytes.NewReader(file), int64(len(file)))
		if err != nil {
			return
		}
		for _, x := range h.Tensors {
			if x.Offset < h.DataStart || x.End() > int64(len(file)) {
				t.Fatalf("tensor %q [%d,%d) outside file of %d", x.Name, x.Offset, x.End(), len(file))
			}
		}
	})
}
