package bench

import (
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/deltafin/deltafin/kernels"
)

// benchBuf is shared by the benchmarks: 768 MiB, well above the last-level
// cache of the machines we measure on, so that rotating through slots reads
// from DRAM as the engine does.
var benchBuf = sync.OnceValue(func() []byte {
	buf := make([]byte, 768<<20)
	for i := range buf {
		buf[i] = 0x3c + byte(i%6)
	}
	return buf
})

// benchSink keeps the benchmark's memory reads alive.
var benchSink uint64

// BenchmarkMemRead is the limit the kernel figures are compared with.
func BenchmarkMemRead(b *testing.B) {
	buf := benchBuf()
	for _, threads := range []int{runtime.NumCPU(), 1} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			b.SetBytes(int64(len(buf)))
			for b.Loop() {
				benchSink = kernels.MemoryRead(buf, threads)
			}
		})
	}
}

// BenchmarkKernels reports each kernel's weight bytes per second (b.SetBytes
// = the weights one call reads) on K3-sized matrices, for every backend.
func BenchmarkKernels(b *testing.B) {
	buf := benchBuf()
	for _, c := range benchCases(1) {
		if c.resident {
			continue // the same bytes as the plain case for every backend here
		}
		stride := (c.bytes + 4095) &^ 4095
		slots := len(buf) / stride
		for s := range slots {
			for _, m := range c.mats(buf[s*stride:]) {
				fillScales(m)
			}
		}
		for _, name := range kernels.Available() {
			threadsList := []int{runtime.NumCPU(), 1}
			if name == "ref" {
				if c.bytes > 64<<20 || c.flops > 1<<30 {
					continue // minutes per call
				}
				threadsList = []int{1}
			}
			for _, threads := range threadsList {
				be, err := kernels.Open(name, threads)
				if err != nil {
					b.Fatal(err)
				}
				b.Run(fmt.Sprintf("%s/%s/threads=%d", c.name, name, threads), func(b *testing.B) {
					b.SetBytes(int64(c.bytes))
					s := 0
					for b.Loop() {
						c.call(be, buf[s*stride:], 0)
						s = (s + 1) % slots
					}
				})
			}
		}
	}
}
