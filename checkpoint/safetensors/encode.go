package safetensors

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// Encode lays ts out back to back in the given order and returns the file's
// header: the 8-byte length prefix and the JSON, padded with spaces so that
// the data section starts on 8 bytes. It sets each tensor's Size (its
// DType's element size × its elements) and its absolute Offset. The
// writers of the int8 spine and of the synthetic bench slice use it; the
// bytes are the same for the same tensors, so a rerun can compare headers.
func Encode(ts []Tensor) []byte {
	var b strings.Builder
	b.WriteString(`{"__metadata__":{"format":"pt"}`)
	var off int64
	for i := range ts {
		t := &ts[i]
		t.Offset, t.Size = off, DTypeSize(t.DType)*t.NumElements()
		dims := make([]string, len(t.Shape))
		for j, d := range t.Shape {
			dims[j] = strconv.FormatInt(d, 10)
		}
		fmt.Fprintf(&b, `,%q:{"dtype":%q,"shape":[%s],"data_offsets":[%d,%d]}`,
			t.Name, t.DType, strings.Join(dims, ","), off, off+t.Size)
		off += t.Size
	}
	b.WriteString("}")
	for b.Len()%8 != 0 {
		b.WriteByte(' ')
	}
	h := make([]byte, 8, 8+b.Len())
	binary.LittleEndian.PutUint64(h, uint64(b.Len()))
	h = append(h, b.String()...)
	for i := range ts {
		ts[i].Offset += int64(len(h))
	}
	return h
}
