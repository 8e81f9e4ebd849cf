package safetensors

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
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

// dtypes are the dtype names this project reads, as constants: a parsed
// tensor's DType is one of them, not a piece of the header's text.
var dtypes = [...]string{"F64", "I64", "U64", "F32", "I32", "U32", "BF16", "F16", "I16", "U16", "U8", "I8", "BOOL", "F8_E4M3", "F8_E5M2"}

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
	DType       string
	Shape       []int64
	DataOffsets []int64
}

// Parse parses the JSON header (without its 8-byte length prefix) of a file
// of fileSize bytes and checks every tensor's range: inside the data section,
// sized exactly by its dtype and shape, and not overlapping another tensor.
// A name may appear once.
//
// It makes a few allocations per header, not per tensor (scan.go): the
// tensors, their shapes and their names each share one block.
func Parse(header []byte, fileSize int64) (*Header, error) {
	if int64(len(header)) > MaxHeaderSize {
		return nil, fmt.Errorf("%w: header of %d bytes exceeds %d", ErrFormat, len(header), MaxHeaderSize)
	}
	h := &Header{DataStart: 8 + int64(len(header))}
	if h.DataStart > fileSize {
		return nil, fmt.Errorf("%w: header runs past the end of a %d-byte file", ErrFormat, fileSize)
	}
	dataLen := fileSize - h.DataStart
	// Every entry has one "data_offsets": size the blocks once.
	n := bytes.Count(header, []byte(`"data_offsets"`))
	h.Tensors = make([]Tensor, 0, n)
	dims := make([]int64, 0, 2*n+8) // every shape, back to back
	var offs [2]int64
	p := &scanner{s: string(header)}
	var bad error // a tensor's semantic error, reported as is
	err := p.object(func(name string) error {
		if name == "__metadata__" {
			h.Metadata = map[string]string{}
			return p.object(func(k string) error {
				if p.peek() != '"' {
					return p.errorf("__metadata__ %q is not a string", k)
				}
				v, err := p.str()
				h.Metadata[strings.Clone(k)] = strings.Clone(v) // not the header's text

				return err
			})
		}
		var e rawEntry
		err := p.object(func(k string) error {
			var err error
			switch k {
			case "dtype":
				e.DType, err = p.str()
			case "shape":
				start := len(dims)
				dims, err = p.ints(dims)
				e.Shape = dims[start:len(dims):len(dims)]
			case "data_offsets":
				e.DataOffsets, err = p.ints(offs[:0])
			default:
				err = p.skip(0)
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("tensor %q: %w", name, err)
		}
		t, err := e.tensor(name, h.DataStart, dataLen)
		if err != nil {
			bad = err
			return err
		}
		h.Tensors = append(h.Tensors, t)
		return nil
	})
	if err == nil {
		err = p.end()
	}
	if bad != nil {
		return nil, bad
	}
	if err != nil {
		return nil, fmt.Errorf("%w: header JSON: %v", ErrFormat, err)
	}
	byOffset := func(a, b Tensor) int { return cmp.Or(cmp.Compare(a.Offset, b.Offset), strings.Compare(a.Name, b.Name)) }
	if !slices.IsSortedFunc(h.Tensors, byOffset) { // writers lay tensors out in order: rarely
		slices.SortFunc(h.Tensors, byOffset)
	}
	h.internNames()
	h.byName = make(map[string]int, len(h.Tensors))
	for i, t := range h.Tensors {
		if _, dup := h.byName[t.Name]; dup {
			return nil, fmt.Errorf("%w: tensor %q appears twice in the header", ErrFormat, t.Name)
		}
		h.byName[t.Name] = i
		if i > 0 && t.Offset < h.Tensors[i-1].End() && t.Size > 0 {
			return nil, fmt.Errorf("%w: tensor %q [%d,%d) overlaps %q", ErrFormat, t.Name, t.Offset, t.End(), h.Tensors[i-1].Name)
		}
	}
	return h, nil
}

// internNames copies the names into one block, so that they do not keep
// the whole header text alive (their total is a third of it).
func (h *Header) internNames() {
	total := 0
	for _, t := range h.Tensors {
		total += len(t.Name)
	}
	var b strings.Builder
	b.Grow(total)
	for _, t := range h.Tensors {
		b.WriteString(t.Name)
	}
	all, at := b.String(), 0
	for i := range h.Tensors {
		t := &h.Tensors[i]
		t.Name, at = all[at:at+len(t.Name)], at+len(t.Name)
	}
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
	dt := e.DType
	for _, d := range dtypes {
		if d == dt {
			dt = d
		}
	}
	return Tensor{Name: name, DType: dt, Shape: e.Shape, Offset: dataStart + begin, Size: end - begin}, nil
}
