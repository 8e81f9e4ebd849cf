package synthckpt

import (
	"encoding/binary"
	"math/rand/v2"
	"os"
	"slices"
	"strings"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/checkpoint/safetensors"
)

// WriteShard writes ts (name, dtype and shape set) to path in one go, the
// bytes of tensor i drawn from a PCG stream seeded by (seed, i): E8M0 bytes
// 120..127 for a "_scale" tensor, bfloat16 of magnitude about 2^-7 for
// BF16, any byte otherwise.
func WriteShard(path string, ts []safetensors.Tensor, seed uint64) error {
	ts = slices.Clone(ts)
	h := safetensors.Encode(ts)
	b := make([]byte, ts[len(ts)-1].End())
	copy(b, h)
	for i, x := range ts {
		dst := b[x.Offset:x.End()]
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		for j := range dst {
			dst[j] = byte(rng.Uint32())
		}
		switch {
		case strings.HasSuffix(x.Name, "_scale"):
			for j := range dst {
				dst[j] = 120 + dst[j]&7
			}
		case x.DType == "BF16":
			for j := 0; j+1 < len(dst); j += 2 {
				v := binary.LittleEndian.Uint16(dst[j:])
				binary.LittleEndian.PutUint16(dst[j:], v&0x807F|0x3C00)
			}
		}
	}
	return os.WriteFile(path, b, 0o644)
}

// Experts lists n experts of one layer, six MXFP4 tensors each with the
// widths inter and latent, in descending id order (physical order differs
// from id order: an index must not assume it).
func Experts(layer, n, inter, latent int) []safetensors.Tensor {
	I, D := int64(inter), int64(latent)
	shapes := [6][2]int64{{I, D / 2}, {I, D / 32}, {D, I / 2}, {D, I / 32}, {I, D / 2}, {I, D / 32}}
	var t []safetensors.Tensor
	for e := n - 1; e >= 0; e-- {
		for part, s := range shapes {
			t = append(t, safetensors.Tensor{Name: ckpt.ExpertName(ckpt.ExpertID{Layer: layer, Expert: e}, part), DType: "U8", Shape: s[:]})
		}
	}
	return t
}
