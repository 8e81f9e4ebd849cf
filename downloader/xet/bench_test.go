package xet

import (
	"crypto/sha256"
	"math/rand/v2"
	"testing"
)

// BenchmarkVerifyCost: chunking and hashing a window, the work a range
// verification adds per byte, next to sha256 of the same bytes, which
// whole-file verification already does (the limit to compare with).
func BenchmarkVerifyCost(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 16<<20)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	b.Run("xet-chunks", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			Current.Chunks(data)
		}
	})
	b.Run("sha256", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			sha256.Sum256(data)
		}
	})
}
