package kernels

import (
	"sync"
	"unsafe"
)

// MemoryRead streams b once, split over threads goroutines (contiguous
// parts, multiples of 128 bytes but the last), as fast as this CPU reads
// memory: C with the widest vector loads of the best instruction set when
// built with cgo, plain Go otherwise, with independent sums so that the
// loads, not the adds, limit it. It is the limit `deltafin bench kernels`
// holds every kernel to, kept here beside the kernels' C code so that both
// are built alike. It returns the sum modulo 2^64 of the 64-bit words of
// each part's whole 64-byte lines (a tail of under 64 bytes is not read),
// which keeps the reads from being optimised away.
func MemoryRead(b []byte, threads int) uint64 {
	threads = max(threads, 1)
	per := (len(b)/threads + 127) &^ 127
	if per == 0 {
		return 0
	}
	sums := make([]uint64, (len(b)+per-1)/per)
	var wg sync.WaitGroup
	for i := range sums {
		part := b[i*per : min((i+1)*per, len(b))]
		wg.Go(func() { sums[i] = readBytes(part) })
	}
	wg.Wait()
	var s uint64
	for _, v := range sums {
		s += v
	}
	return s
}

// readBytesGo is the memory read in Go: eight independent sums of 64-bit
// words over whole 64-byte lines.
func readBytesGo(b []byte) uint64 {
	w := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/8)
	var s0, s1, s2, s3, s4, s5, s6, s7 uint64
	for i := 0; i+8 <= len(w); i += 8 {
		p := w[i : i+8 : i+8]
		s0 += p[0]
		s1 += p[1]
		s2 += p[2]
		s3 += p[3]
		s4 += p[4]
		s5 += p[5]
		s6 += p[6]
		s7 += p[7]
	}
	return s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7
}

// IsCPU reports whether b is one of this package's CPU backends (the C
// kernels or the reference), which read every matrix from host memory and
// ignore Matrix.Key; a GPU backend, or Split and Accelerate over one, may
// not.
func IsCPU(b Backend) bool {
	switch b.(type) {
	case *fastBackend, refBackend:
		return true
	}
	return false
}
