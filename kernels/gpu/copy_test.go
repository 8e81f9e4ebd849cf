package gpu

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/deltafin/deltafin/kernels"
	"github.com/stretchr/testify/require"
)

// parallelCopies makes each pair's copy as copy would: the shorter of the
// two lengths, nothing written past it, pairs of every size together
// (empty, one byte, under a chunk, over many, dst or src the shorter).
func TestParallelCopiesIsCopy(t *testing.T) {
	sizes := [][2]int{{0, 0}, {1, 1}, {5, 3}, {3, 5}, {copyChunk - 1, copyChunk - 1}, {4*copyChunk + 7, 4*copyChunk + 7},
		{9*copyChunk + 4093, 10 * copyChunk}, {copyChunk / 3, copyChunk / 3}, {2 * copyChunk, copyChunk + 1}}
	for _, one := range []bool{true, false} {
		var pairs []copyPair
		var want [][]byte
		for i, s := range sizes {
			if one && i > 0 && s[0] < copyChunk {
				continue // alone, the large ones are spread too
			}
			src, dst := make([]byte, s[1]), make([]byte, s[0]+16)
			for k := range src {
				src[k] = byte(k*7 + i)
			}
			for k := range dst {
				dst[k] = 0xA5
			}
			w := append([]byte(nil), dst...)
			copy(w[:s[0]], src)
			pairs = append(pairs, copyPair{dst[:s[0]], src})
			want = append(want, w)
			if one {
				parallelCopies(pairs[len(pairs)-1:])
			}
		}
		if !one {
			parallelCopies(pairs)
		}
		for i, p := range pairs {
			require.Equal(t, want[i], p.dst[:cap(p.dst)], "pair %d (alone %v)", i, one)
		}
	}
}

// The host's copies into and out of the slots: a piece's inputs (64
// positions × 7,168 columns), one product's results over them (12,288
// rows), and a group of 48 experts' inputs of 40 positions each (1.1 MB
// an expert), spread together or one expert after another as they were;
// spans of copyChunk and of a quarter of it. GB/s as a share of this
// machine's memory read on all cores (kernels.MemoryRead) in the same
// run; a copy reads and writes each byte, so the share counts both. The
// copies cycle through 1 GiB of buffers, so that they come from memory,
// as a slot's results written by the device's DMA do, rather than from
// the caches.
func BenchmarkParallelCopies(b *testing.B) {
	threads := runtime.NumCPU()
	// 1 GiB each, above any last-level cache (480 MiB on one of our CI
	// machines), filled: an untouched page reads as the shared zero page.
	probe, src, dst := make([]byte, 1<<30), make([]byte, 1<<30), make([]byte, 1<<30)
	for i := range probe {
		probe[i], src[i] = byte(i), byte(i>>8)
	}
	for _, c := range []struct {
		name        string
		pieces, per int
		apart       bool
	}{
		{"inputs_64x7168", 1, 4 * 64 * 7168, false},
		{"results_64x12288", 1, 4 * 64 * 12288, false},
		{"experts_48x40x7168_together", 48, 4 * 40 * 7168, false},
		{"experts_48x40x7168_apart", 48, 4 * 40 * 7168, true},
	} {
		for _, chunk := range []int{copyChunk, copyChunk / 4} {
			b.Run(fmt.Sprintf("%s/chunk=%dKiB/threads=%d", c.name, chunk>>10, threads), func(b *testing.B) {
				size := c.pieces * c.per
				sets := len(src) / size
				pairs := make([][]copyPair, sets)
				for s := range pairs {
					for j := range c.pieces {
						lo := s*size + j*c.per
						pairs[s] = append(pairs[s], copyPair{dst[lo : lo+c.per], src[lo : lo+c.per]})
					}
				}
				run := func(ps []copyPair) {
					if !c.apart {
						spreadCopies(ps, chunk)
						return
					}
					for _, p := range ps {
						spreadCopies([]copyPair{p}, chunk)
					}
				}
				for _, ps := range pairs {
					run(ps)
				}
				b.SetBytes(int64(size))
				i := 0
				for b.Loop() {
					run(pairs[i%sets])
					i++
				}
				copied := float64(size) * float64(b.N) / b.Elapsed().Seconds()
				b.ReportMetric(2*copied/memRead(probe, threads), "mem-share")
			})
		}
	}
}

// memRead is this machine's memory read on threads cores, bytes/s: the
// fastest of three passes over probe.
func memRead(probe []byte, threads int) float64 {
	best := time.Duration(1 << 62)
	for range 3 {
		t := time.Now()
		kernels.MemoryRead(probe, threads)
		best = min(best, time.Since(t))
	}
	return float64(len(probe)) / best.Seconds()
}
