package safetensors

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
)

// MaxHeaderSize bounds the JSON header, as the reference implementation does
// (100 MB); the largest K3 shard header is under 2 MB.
const MaxHeaderSize = 100 << 20

// maxRank bounds a tensor's number of dimensions.
const maxRank = 8

// ErrFormat is wrapped by every error about a malformed file.
var ErrFormat = errors.New("safetensors: malformed file")

// A Tensor is one entry of the header. Offset is absolute in the file.
type Tensor struct {
	Name   string
	DType  string // "BF16", "F16", "F32", "U8", "I8", ...
	Shape  []int64
	Offset int64 // absolute file offset of the first byte
	Size   int64 // bytes
}

// End returns the absolute offset one past the tensor's last byte.
func (t Tensor) End() int64 { return t.Offset + t.Size }

// NumElements returns the product of the shape (1 for a scalar).
func (t Tensor) NumElements() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Header is a parsed safetensors header.
type Header struct {
	// DataStart is the absolute offset of the data section: 8 + header length.
	DataStart int64
	// Tensors in ascending Offset order.
	Tensors  []Tensor
	Metadata map[string]string
	byName   map[string]int
}

// Lookup returns the named tensor.
func (h *Header) Lookup(name string) (Tensor, bool) {
	i, ok := h.byName[name]
	if !ok {
		return Tensor{}, false
	}
	return h.Tensors[i], true
}

// DTypeSize returns the byte size of one element of a safetensors dtype, or 0
// for a dtype this project does not read.
func DTypeSize(dtype string) int64 {
	switch dtype {
	case "F64", "I64", "U64":
		return 8
	case "F32", "I32", "U32":
		return 4
	case "BF16", "F16", "I16", "U16":
		return 2
	case "U8", "I8", "BOOL", "F8_E4M3", "F8_E5M2":
		return 1
	}
	return 0
}

// HeaderLength decodes the 8-byte prefix and bounds it by the file size.
func HeaderLength(prefix []byte, fileSize int64) (int64, error) {
	if len(prefix) < 8 || fileSize < 8 {
		return 0, fmt.Errorf("%w: shorter than the 8-byte header length", ErrFormat)
	}
	n := binary.LittleEndian.Uint64(prefix)
	if n > MaxHeaderSize {
		return 0, fmt.Errorf("%w: header length %d exceeds %d", ErrFormat, n, MaxHeaderSize)
	}
	if int64(n) > fileSize-8 {
		return 0, fmt.Errorf("%w: header length %d runs past the end of a %d-byte file (truncated?)", ErrFormat, n, fileSize)
	}
	return int64(n), nil
}

// Read parses the header of a file of fileSize bytes through r.
func Read(r io.ReaderAt, fileSize int64) (*Header, error) {
	var prefix [8]byte
	if _, err := r.ReadAt(prefix[:], 0); err != nil {
		return nil, fmt.Errorf("%w: reading header length: %v", ErrFormat, err)
	}
	n, err := HeaderLength(prefix[:], fileSize)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, n)
	if _, err := r.ReadAt(buf, 8); err != nil {
		return nil, fmt.Errorf("%w: reading %d-byte header: %v", ErrFormat, n, err)
	}
	return Parse(buf, fileSize)
}

type rawEntry struct {
	DType       string  `json:"dtype"`
	Shape       []int64 `json:"shape"`
	DataOffsets []int64 `json:"data_offsets"`
}

// Parse parses the JSON header (without its 8-byte length prefix) of a file
// of fileSize bytes and checks every tensor's range: inside the data section,
// sized exactly by its dtype and shape, and not overlapping another tensor.
func Parse(header []byte, fileSize int64) (*Header, error) {
	if int64(len(header)) > MaxHeaderSize {
		return nil, fmt.Errorf("%w: header of %d bytes exceeds %d", ErrFormat, len(header), MaxHeaderSize)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(header, &raw); err != nil {
		return nil, fmt.Errorf("%w: header JSON: %v", ErrFormat, err)
	}
	h := &Header{DataStart: 8 + int64(len(header)), byName: make(map[string]int, len(raw))}
	if h.DataStart > fileSize {
		return nil, fmt.Errorf("%w: header runs past the end of a %d-byte file", ErrFormat, fileSize)
	}
	dataLen := fileSize - h.DataStart
	for name, msg := range raw {
		if name == "__metadata__" {
			if err := json.Unmarshal(msg, &h.Metadata); err != nil {
				return nil, fmt.Errorf("%w: __metadata__ is not a string map: %v", ErrFormat, err)
			}
			continue
		}
		var e rawEntry
		if err := json.Unmarshal(msg, &e); err != nil {
			return nil, fmt.Errorf("%w: tensor %q: %v", ErrFormat, name, err)
		}
		t, err := e.tensor(name, h.DataStart, dataLen)
		if err != nil {
			return nil, err
		}
		h.Tensors = append(h.Tensors, t)
	}
	sort.Slice(h.Tensors, func(i, j int) bool {
		a, b := h.Tensors[i], h.Tensors[j]
		if a.Offset != b.Offset {
			return a.Offset < b.Offset
		}
		return a.Name < b.Name
	})
	for i, t := range h.Tensors {
		h.byName[t.Name] = i
		if i > 0 && t.Offset < h.Tensors[i-1].End() && t.Size > 0 {
			return nil, fmt.Errorf("%w: tensor %q [%d,%d) overlaps %q", ErrFormat, t.Name, t.Offset, t.End(), h.Tensors[i-1].Name)
		}
	}
	return h, nil
}

func (e rawEntry) tensor(name string, dataStart, dataLen int64) (Tensor, error) {
	bad := func(format string, args ...any) (Tensor, error) {
		return Tensor{}, fmt.Errorf("%w: tensor %q: %s", ErrFormat, name, fmt.Sprintf(format, args...))
	}
	size := DTypeSize(e.DType)
	if size == 0 {
		return bad("unsupported dtype %q", e.DType)
	}
	if len(e.Shape) > maxRank {
		return bad("rank %d exceeds %d", len(e.Shape), maxRank)
	}
	if len(e.DataOffsets) != 2 {
		return bad("data_offsets has %d values, want 2", len(e.DataOffsets))
	}
	n := int64(1)
	for _, d := range e.Shape {
		if d < 0 {
			return bad("negative dimension in shape %v", e.Shape)
		}
		if d != 0 && n > math.MaxInt64/size/d {
			return bad("shape %v overflows", e.Shape)
		}
		n *= d
	}
	begin, end := e.DataOffsets[0], e.DataOffsets[1]
	if begin < 0 || end < begin || end > dataLen {
		return bad("data_offsets [%d,%d) outside the %d-byte data section (truncated file?)", begin, end, dataLen)
	}
	if end-begin != n*size {
		return bad("%s %v needs %d bytes, data_offsets span %d", e.DType, e.Shape, n*size, end-begin)
	}
	return Tensor{Name: name, DType: e.DType, Shape: e.Shape, Offset: dataStart + begin, Size: end - begin}, nil
}
