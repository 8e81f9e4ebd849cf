package engine

import (
	"encoding/binary"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltafin/deltafin/kernels"
	"github.com/stretchr/testify/require"
)

// f16Exact encodes v as IEEE half when that is exact.
func f16Exact(v float32) (uint16, bool) {
	bits := math.Float32bits(v)
	sign := uint16(bits>>16) & 0x8000
	a := math.Abs(float64(v))
	switch {
	case a == 0:
		return sign, true
	case math.IsInf(a, 0) || math.IsNaN(a) || a >= 65520:
		return 0, false
	}
	frac, exp := math.Frexp(a) // a = frac·2^exp, frac in [0.5,1)
	var h uint16
	if e := exp - 1; e >= -14 {
		m := (frac*2 - 1) * 1024 // normal: 1.m × 2^e
		if m != math.Trunc(m) || e > 15 {
			return 0, false
		}
		h = uint16(e+15)<<10 | uint16(m)
	} else {
		m := a * (1 << 24) // subnormal: m × 2^-24
		if m != math.Trunc(m) || m >= 1024 {
			return 0, false
		}
		h = uint16(m)
	}
	if kernels.F16ToF32(sign|h) != v {
		return 0, false
	}
	return sign | h, true
}

// TestDTypes rewrites every BF16 tensor of the K3 tiny checkpoint as F16
// where each value is exactly representable, else as F32: the widened
// weights are the same, so the logits are bit-identical (on the reference
// backend, whose summation order does not depend on the dtype).
func TestDTypes(t *testing.T) {
	t.Parallel()
	src := filepath.Join("..", "testdata", "k3-tiny")
	mm := readModel(t, src)
	var f16, f32 int
	for _, ts := range mm.shards {
		for i := range ts {
			x := &ts[i]
			if x.dtype != "BF16" {
				continue
			}
			n := len(x.data) / 2
			vals := make([]float32, n)
			half := make([]byte, 2*n)
			exact := true
			for j := range vals {
				vals[j] = kernels.BF16ToF32(binary.LittleEndian.Uint16(x.data[2*j:]))
				h, ok := f16Exact(vals[j])
				exact = exact && ok
				binary.LittleEndian.PutUint16(half[2*j:], h)
			}
			if exact {
				x.dtype, x.data = "F16", half
				f16++
				continue
			}
			wide := make([]byte, 4*n)
			for j, v := range vals {
				binary.LittleEndian.PutUint32(wide[4*j:], math.Float32bits(v))
			}
			x.dtype, x.data = "F32", wide
			f32++
		}
	}
	t.Logf("%d tensors as F16, %d as F32", f16, f32)
	require.Positive(t, f16)
	require.Positive(t, f32)

	orig, err := Open(t.Context(), src, Options{Backend: kernels.Ref()})
	require.NoError(t, err)
	defer orig.Close()
	conv, err := Open(t.Context(), mm.write(t), Options{Backend: kernels.Ref()})
	require.NoError(t, err)
	defer conv.Close()
	ids := []int{1008 % 768, 5, 77, 300, 12, 640, 3}
	a, err := orig.NewSession().Forward(t.Context(), ids, true)
	require.NoError(t, err)
	b, err := conv.NewSession().Forward(t.Context(), ids, true)
	require.NoError(t, err)
	require.Equal(t, flatten(a), flatten(b))
}

// TestVisionTensorsIgnored: in the multimodal wrapper, tensors outside
// language_model. (the vision tower, the projector) are not the text
// model's and do not fail validation.
func TestVisionTensorsIgnored(t *testing.T) {
	t.Parallel()
	mm := readModel(t, filepath.Join("..", "testdata", "k3-tiny"))
	const f = "model-00004-of-000004.safetensors"
	mm.shards[f] = append(mm.shards[f],
		stTensor{"vision_tower.patch_embed.weight", "BF16", []int64{2, 2}, make([]byte, 8)},
		stTensor{"mm_projector.linear.weight", "F32", []int64{3}, make([]byte, 12)})
	m, err := Open(t.Context(), mm.write(t), Options{})
	require.NoError(t, err)
	defer m.Close()
	for name := range m.ck.tensors {
		require.False(t, strings.Contains(name, "vision") || strings.Contains(name, "mm_projector"), name)
	}
}
