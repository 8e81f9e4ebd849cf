package engine

import (
	"encoding/binary"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/deltafin/deltafin/engine/safetensors"
	"github.com/stretchr/testify/require"
)

// Synthetic shards for the store and index tests: named tensors in a given
// physical order, filled with seeded pseudo-random bytes shaped so that a
// kernel reading them meets finite values (package bench writes the K3-size
// slice with its own resumable writer).

type fillKind uint8

const (
	fillRaw   fillKind = iota // any byte (MXFP4 packed codes)
	fillScale                 // e8m0 bytes 120..127
	fillBF16                  // bfloat16 of magnitude about 2^-7
)

type synthTensor struct {
	name  string
	dtype string
	shape []int64
	fill  fillKind
}

// shardHeader encodes ts's header and returns it with each tensor's
// absolute offset.
func shardHeader(ts []synthTensor) ([]byte, []int64) {
	st := make([]safetensors.Tensor, len(ts))
	for i, t := range ts {
		st[i] = safetensors.Tensor{Name: t.name, DType: t.dtype, Shape: t.shape}
	}
	h := safetensors.Encode(st)
	offs := make([]int64, len(st))
	for i, t := range st {
		offs[i] = t.Offset
	}
	return h, offs
}

func sumSize(ts []synthTensor) int64 {
	var n int64
	for _, t := range ts {
		e := int64(1)
		for _, d := range t.shape {
			e *= d
		}
		n += e * safetensors.DTypeSize(t.dtype)
	}
	return n
}

// writeSyntheticShard writes ts to path in one go, the bytes of tensor i
// drawn from a PCG stream seeded by (seed, i).
func writeSyntheticShard(t testing.TB, path string, ts []synthTensor, seed uint64) {
	t.Helper()
	h, offs := shardHeader(ts)
	b := make([]byte, int64(len(h))+sumSize(ts))
	copy(b, h)
	for i, tn := range ts {
		end := int64(len(b))
		if i+1 < len(ts) {
			end = offs[i+1]
		}
		fillSynthetic(b[offs[i]:end], tn.fill, rand.New(rand.NewPCG(seed, uint64(i))))
	}
	require.NoError(t, os.WriteFile(path, b, 0o644))
}

// fillSynthetic fills dst with random bytes shaped by kind.
func fillSynthetic(dst []byte, kind fillKind, rng *rand.Rand) {
	for i := range dst {
		dst[i] = byte(rng.Uint32())
	}
	switch kind {
	case fillScale:
		for i := range dst {
			dst[i] = 120 + dst[i]&7
		}
	case fillBF16:
		for i := 0; i+1 < len(dst); i += 2 {
			v := binary.LittleEndian.Uint16(dst[i:])
			binary.LittleEndian.PutUint16(dst[i:], v&0x807F|0x3C00)
		}
	}
}

// syntheticExperts lists n experts of one layer, six MXFP4 tensors each
// with the widths inter and latent, in descending id order (physical
// order differs from id order: the index must not assume it).
func syntheticExperts(layer, n, inter, latent int) []synthTensor {
	I, D := int64(inter), int64(latent)
	shapes := [6][2]int64{{I, D / 2}, {I, D / 32}, {D, I / 2}, {D, I / 32}, {I, D / 2}, {I, D / 32}}
	var t []synthTensor
	for e := n - 1; e >= 0; e-- {
		for part, s := range shapes {
			t = append(t, synthTensor{ExpertName(ExpertID{layer, e}, part), "U8", s[:], fillKind(part % 2)})
		}
	}
	return t
}
