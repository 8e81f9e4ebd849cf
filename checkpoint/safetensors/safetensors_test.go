package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
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
		{"duplicate name", `{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"a":{"dtype":"U8","shape":[4],"data_offsets":[4,8]}}`, 8, "appears twice"},
		{"data after the object", `{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}x`, 4, "after the end"},
		{"fractional offset", `{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4.0]}}`, 4, "fraction"},
		{"leading zero", `{"a":{"dtype":"U8","shape":[04],"data_offsets":[0,4]}}`, 4, "leading zero"},
		{"huge integer", `{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,99999999999999999999]}}`, 4, "overflows"},
		{"string shape", `{"a":{"dtype":"U8","shape":"4","data_offsets":[0,4]}}`, 4, `tensor "a"`},
		{"control character", "{\"a\x01\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}", 4, "control character"},
		{"unterminated", `{"a":{"dtype":"U8`, 4, "unterminated"},
		{"deep metadata", `{"__metadata__":{"a":"b"},"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"extra":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}}`, 1, "nested deeper"},
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

// The scanner reads what encoding/json reads: escaped names, unknown
// members of an entry (skipped), whitespace anywhere, entries out of
// offset order.
func TestParseAgreesWithEncodingJSON(t *testing.T) {
	t.Parallel()
	header := " {\n \"b\\u00e9\\\"\\/\" : { \"shape\" : [ 2 , 2 ] , \"note\": {\"k\": [1, -2.5e3, true, null, \"s\"]}, \"dtype\":\"F32\", \"data_offsets\":[4,20]},\n" +
		` "__metadata__": {"format": "pt", "w\u0041": "x"}, "a": {"dtype": "U8", "shape": [], "data_offsets": [0, 1]} }   `
	file := build(header, 20)
	h, err := Read(bytes.NewReader(file), int64(len(file)))
	require.NoError(t, err)
	var ref map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(header), &ref))
	var meta map[string]string
	require.NoError(t, json.Unmarshal(ref["__metadata__"], &meta))
	require.Equal(t, meta, h.Metadata)
	require.Len(t, h.Tensors, len(ref)-1)
	for name, msg := range ref {
		if name == "__metadata__" {
			continue
		}
		var e struct {
			DType       string  `json:"dtype"`
			Shape       []int64 `json:"shape"`
			DataOffsets []int64 `json:"data_offsets"`
		}
		require.NoError(t, json.Unmarshal(msg, &e))
		got, ok := h.Lookup(name)
		require.True(t, ok, name)
		require.Equal(t, e.DType, got.DType)
		require.Equal(t, e.Shape, got.Shape)
		require.Equal(t, h.DataStart+e.DataOffsets[0], got.Offset)
	}
	require.Equal(t, "a", h.Tensors[0].Name, "sorted by offset")
	require.Equal(t, "bé\"/", h.Tensors[1].Name)
}

func TestParseIndex(t *testing.T) {
	t.Parallel()
	got, err := ParseIndex([]byte(`{"metadata": {"total_size": 1.5e3, "x": [null]}, "weight_map": {"a": "m-1.safetensors", "b\u0062": "m-2.safetensors", "c": "m-1.safetensors"}}`))
	require.NoError(t, err)
	require.Equal(t, []IndexEntry{{"a", "m-1.safetensors"}, {"bb", "m-2.safetensors"}, {"c", "m-1.safetensors"}}, got)
	for _, bad := range []string{`{"metadata": {}}`, `{"weight_map": {"a": 1}}`, `{"weight_map": {"a": "x"}`, `[]`, `{"weight_map": {}} {}`} {
		_, err := ParseIndex([]byte(bad))
		require.ErrorIs(t, err, ErrFormat, bad)
	}
}

func FuzzParseIndex(f *testing.F) {
	f.Add([]byte(`{"metadata":{"total_size":3},"weight_map":{"a":"m.safetensors"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := ParseIndex(b)
		if err != nil {
			return
		}
		var ref struct {
			WeightMap map[string]string `json:"weight_map"`
		}
		if json.Unmarshal(b, &ref) != nil {
			return // encoding/json also rejects invalid UTF-8 in places the scanner passes through
		}
		for _, e := range got {
			if _, ok := ref.WeightMap[e.Name]; !ok {
				t.Fatalf("entry %q not in encoding/json's map", e.Name)
			}
		}
	})
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
