package kernels

import (
	"errors"
	"fmt"
	"sync/atomic"
)

// DType is how a weight matrix's elements are stored on disk.
type DType uint8

const (
	F32   DType = iota // IEEE float32, little-endian
	BF16               // bfloat16, little-endian; widened exactly to fp32
	F16                // IEEE half, little-endian
	I8                 // int8 with one float32 scale per row (W[r,c] = q[r,c]·scale[r])
	MXFP4              // e2m1 nibbles (low nibble = even column) with one e8m0 scale per 32 columns
)

func (d DType) String() string {
	switch d {
	case F32:
		return "F32"
	case BF16:
		return "BF16"
	case F16:
		return "F16"
	case I8:
		return "I8"
	case MXFP4:
		return "MXFP4"
	}
	return fmt.Sprintf("DType(%d)", uint8(d))
}

// MXFP4GroupSize is the number of columns that share one e8m0 scale.
const MXFP4GroupSize = 32

// ErrShape reports a matrix whose byte slices do not match its declared shape.
var ErrShape = errors.New("kernels: matrix shape mismatch")

// Matrix is a row-major [Rows, Cols] weight matrix viewed over bytes as they
// are stored on disk, so that a pinned spine range or a freshly read expert is
// used without a copy.
type Matrix struct {
	DType      DType
	Rows, Cols int
	// Data holds the elements: Rows·Cols·{4,2,2,1} bytes for F32/BF16/F16/I8,
	// Rows·Cols/2 for MXFP4.
	Data []byte
	// Scales is Rows·Cols/32 e8m0 bytes for MXFP4, Rows little-endian float32
	// for I8, and nil otherwise.
	Scales []byte
	// Key, when nonzero, promises that Data and Scales never change while
	// the process runs (weights the engine keeps in RAM: the pinned spine,
	// experts loaded whole) and names them, so that a GPU backend may keep
	// a copy in device memory under it. Streamed bytes, which arrive in
	// reused buffers, have none. NewKey hands keys out.
	Key uint64
}

var lastKey atomic.Uint64

// NewKey returns a Matrix.Key no other matrix of this process has.
func NewKey() uint64 { return lastKey.Add(1) }

// Validate checks that the byte slices match the shape. The engine validates
// every matrix once at open time, so the kernels themselves do not re-check.
func (m Matrix) Validate() error {
	if m.Rows <= 0 || m.Cols <= 0 {
		return fmt.Errorf("%w: %s [%d,%d] has a non-positive dimension", ErrShape, m.DType, m.Rows, m.Cols)
	}
	n := m.Rows * m.Cols
	var data, scales int
	switch m.DType {
	case F32:
		data = 4 * n
	case BF16, F16:
		data = 2 * n
	case I8:
		data, scales = n, 4*m.Rows
	case MXFP4:
		if m.Cols%MXFP4GroupSize != 0 {
			return fmt.Errorf("%w: MXFP4 [%d,%d]: columns not a multiple of %d", ErrShape, m.Rows, m.Cols, MXFP4GroupSize)
		}
		data, scales = n/2, n/MXFP4GroupSize
	default:
		return fmt.Errorf("%w: unknown dtype %s", ErrShape, m.DType)
	}
	if len(m.Data) != data || len(m.Scales) != scales {
		return fmt.Errorf("%w: %s [%d,%d] wants %d data and %d scale bytes, has %d and %d",
			ErrShape, m.DType, m.Rows, m.Cols, data, scales, len(m.Data), len(m.Scales))
	}
	return nil
}

// ActKind selects the gated activation of an FFN.
type ActKind uint8

const (
	SiLU ActKind = iota // silu(g)·u
	SiTU                // [β·tanh(g/β)·σ(g)]·[β_lin·tanh(u/β_lin)] (docs/MODEL.md §5.9)
)

// Activation is a gated activation act(g, u) with its parameters.
type Activation struct {
	Kind       ActKind
	Beta       float32 // SiTU: activation_situ_beta (4 in K3)
	LinearBeta float32 // SiTU: activation_situ_linear_beta (25 in K3)
}

// Expert is one gated FFN: dst = W2 · act(W1·x, W3·x). W1 (gate) and W3 (up)
// are [I, D]; W2 (down) is [D, I].
type Expert struct {
	W1, W2, W3 Matrix
}

// A Backend runs the few operations whose cost is the weights' bytes. All
// methods are safe for concurrent use. Shapes are the caller's contract
// (checked once at model open), so a mismatch is a programmer error and panics.
type Backend interface {
	// Name identifies the backend in doctor and bench output ("ref", "c",
	// "avx2", "avx512", "neon").
	Name() string
	// MatVec computes dst[r] = Σ_c W[r,c]·x[c]; len(dst) = Rows, len(x) = Cols.
	MatVec(dst []float32, w Matrix, x []float32)
	// MatMul applies W to n row vectors: x is [n, Cols], dst is [n, Rows].
	MatMul(dst []float32, w Matrix, x []float32, n int)
	// ExpertFFN computes dst = W2·act(W1·x, W3·x) for n row vectors:
	// x is [n, D], dst is [n, D].
	ExpertFFN(dst []float32, e Expert, act Activation, x []float32, n int)
}
