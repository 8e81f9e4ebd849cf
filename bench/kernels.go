package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/deltafin/deltafin/kernels"
)

// ErrNoKernel is Kernels' error when KernelsOptions.Only matches no kernel.
var ErrNoKernel = errors.New("bench: no such kernel")

// KernelsOptions configures Kernels. Zero values pick the defaults.
type KernelsOptions struct {
	// Backend is a name for kernels.Open ("auto" when empty).
	Backend string
	// Threads is "all cores" (runtime.NumCPU() when 0).
	Threads int
	// BufferBytes is the buffer that the memory read streams over and that
	// the weight matrices rotate through, so every call reads from DRAM, not
	// from the last-level cache: 1 GiB by default, and at least twice the
	// largest kernel's weights.
	BufferBytes int
	// MinTime is how long each figure is measured (300 ms by default); it
	// is the best of at least two passes of about 128 MiB each.
	MinTime time.Duration
	// Shrink divides every matrix's rows (1 = K3 sizes); tests use it to
	// run in a moment.
	Shrink int
	// Only keeps the kernels whose name contains it (empty: all).
	Only string
	// MaxPositions drops the products over more positions than this (0:
	// none dropped): a software GPU in the tests takes minutes over them.
	MaxPositions int
}

// KernelsReport is what `deltafin bench kernels --json` prints.
type KernelsReport struct {
	Backend     string `json:"backend"`
	MemThreads  int    `json:"mem_threads"`
	BufferBytes int    `json:"buffer_bytes"`
	// MemReadGBps is the streaming read bandwidth with all threads, the
	// limit every ratio is relative to: the best read of the whole run (a
	// measurement before the kernels and the passes interleaved with them).
	MemReadGBps float64 `json:"mem_read_gbps"`
	// MemReadOneGBps is the same with one thread, for context.
	MemReadOneGBps float64 `json:"mem_read_one_thread_gbps"`
	// FMAPeakGFLOPS is the fp32 multiply-add rate with all threads
	// (kernels.FMAPeak, 10^9 floating-point operations per second), the
	// compute limit every flop_ratio is relative to: the best of a
	// measurement before the kernels and one after them.
	FMAPeakGFLOPS float64 `json:"fma_peak_gflops"`
	// GPUPeakGFLOPS is the GPU's own fp32 multiply-add rate (GPUPeak, a
	// peak shader), measured before the kernels and after them like the
	// CPU's, where the backend has a GPU (a GPU backend, "gpu", or "auto"
	// with an accelerator); absent otherwise.
	GPUPeakGFLOPS float64        `json:"gpu_peak_gflops,omitempty"`
	Kernels       []KernelResult `json:"kernels"`
}

// KernelResult is one kernel's effective weight bandwidth: weight bytes
// (elements and scales) read per second.
type KernelResult struct {
	Name    string  `json:"name"`
	Threads int     `json:"threads"`
	GBps    float64 `json:"gbps"`
	Ratio   float64 `json:"ratio"` // GBps / MemReadGBps
	// PairedRatio is GBps over the best read of the passes interleaved
	// with this kernel's: on a shared machine, the fairer of the two.
	PairedRatio float64 `json:"paired_ratio"`
	// GFLOPS is a matmul's arithmetic rate, 2·rows·cols·positions
	// operations a call (an expert's three matrices for the multi-position
	// expert FFN), and FLOPRatio that over FMAPeakGFLOPS (both absent for
	// the decode expert kernels).
	// On a GPU backend's own report (the backend is the GPU, not a CPU
	// beside it) FLOPRatio is over GPUPeakGFLOPS: the limit of the device
	// that ran the product. GPUFLOPRatio is over GPUPeakGFLOPS whenever
	// there is one.
	GFLOPS       float64 `json:"gflops,omitempty"`
	FLOPRatio    float64 `json:"flop_ratio,omitempty"`
	GPUFLOPRatio float64 `json:"gpu_flop_ratio,omitempty"`
	// DeviceGFLOPS is the rate by the GPU's own clock: the operations over
	// the time the device spent in the kernel's shaders (its timestamps
	// around each dispatch; the best pass), the rate of the shaders with
	// their operands already in device memory; DeviceFLOPRatio is that
	// over GPUPeakGFLOPS. DeviceCopyShare is the fraction of the best
	// pass's wall time the device spent copying operands and results
	// between host and device memory (the rest of the call beside shaders and copies is the
	// host's: its copies into the mapped slots, the submission, the wait).
	// The copies run on a queue of their own, beside the shaders of the
	// call before, so the shaders' time and the copies' may overlap: a
	// share of more than what the shaders leave is copies hidden under
	// them.
	// Absent where no GPU ran the kernel or the GPU keeps no time.
	DeviceGFLOPS    float64 `json:"device_gflops,omitempty"`
	DeviceFLOPRatio float64 `json:"device_flop_ratio,omitempty"`
	DeviceCopyShare float64 `json:"device_copy_share,omitempty"`
}

// deviceBest keeps a kernel's best pass by the device's clock.
type deviceBest struct {
	shaders, copies, wall time.Duration
}

// add records one pass: its shader time if the best so far, and with the
// wall time's best its copies.
func (d *deviceBest) add(c *deviceClock, wall time.Duration) {
	sh, cp, ok := c.since()
	if !ok || sh <= 0 {
		return
	}
	if d.shaders == 0 || sh < d.shaders {
		d.shaders = sh
	}
	if d.wall == 0 || wall < d.wall {
		d.wall, d.copies = wall, cp
	}
}

// fill sets r's device figures for flops a pass.
func (d *deviceBest) fill(r *KernelResult, flops int) {
	if d.shaders <= 0 {
		return
	}
	if flops > 0 {
		r.DeviceGFLOPS = float64(flops) / d.shaders.Seconds() / 1e9
	}
	r.DeviceCopyShare = d.copies.Seconds() / d.wall.Seconds()
}

// benchCase is one kernel on K3-sized matrices laid out from offset 0 of a
// slot of the buffer; call runs it once on that slot's bytes.
type benchCase struct {
	name  string
	bytes int // weight bytes per call
	flops int // floating-point operations per call (0: not counted)
	mats  func(slot []byte) []kernels.Matrix
	// call runs the kernel on slot's matrices, which carry key as their
	// Matrix.Key (0: not resident).
	call func(b kernels.Backend, slot []byte, key uint64)
	// resident: the matrices get keys, so a GPU backend reads them from
	// its own memory after the first pass; only benched on GPU backends.
	resident  bool
	positions int // of a matrix product (0: an expert case)
}

// matBytes is the size of a matrix's elements and of its scales.
func matBytes(dt kernels.DType, rows, cols int) (data, scales int) {
	n := rows * cols
	switch dt {
	case kernels.F32:
		return 4 * n, 0
	case kernels.BF16, kernels.F16:
		return 2 * n, 0
	case kernels.I8:
		return n, 4 * rows
	}
	return n / 2, n / kernels.MXFP4GroupSize
}

// matAt views a matrix at slot[off:], elements then scales (as an expert's
// span stores them), and returns the offset after it.
func matAt(slot []byte, dt kernels.DType, rows, cols, off int) (kernels.Matrix, int) {
	data, scales := matBytes(dt, rows, cols)
	m := kernels.Matrix{DType: dt, Rows: rows, Cols: cols, Data: slot[off : off+data]}
	if scales > 0 {
		m.Scales = slot[off+data : off+data+scales]
	}
	return m, off + data + scales
}

// fillScales gives a matrix scales of 1/127 (I8) or 2^0 (MXFP4) so that no
// value in the run is subnormal, which is slow on some CPUs for reasons that
// have nothing to do with the kernels.
func fillScales(m kernels.Matrix) {
	switch m.DType {
	case kernels.I8:
		for r := range m.Rows {
			binary.LittleEndian.PutUint32(m.Scales[4*r:], math.Float32bits(1.0/127))
		}
	case kernels.MXFP4:
		for i := range m.Scales {
			m.Scales[i] = 127
		}
	}
}

func benchVec(n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = 0.5 + float32(i%7)/7
	}
	return x
}

func benchCases(shrink int) []benchCase {
	var out []benchCase
	matmul := func(dt kernels.DType, rows, cols, n int, resident bool) {
		rows = max(rows/shrink, 1)
		data, scales := matBytes(dt, rows, cols)
		x, dst := benchVec(n*cols), make([]float32, n*rows)
		name := fmt.Sprintf("matvec_%s_%dx%d", dt, rows, cols)
		if n > 1 {
			name = fmt.Sprintf("matmul_%s_%dx%d_t%d", dt, rows, cols, n)
		}
		if resident {
			name += "_resident"
		}
		out = append(out, benchCase{
			name: name, bytes: data + scales, flops: 2 * rows * cols * n, resident: resident, positions: n,
			mats: func(slot []byte) []kernels.Matrix { m, _ := matAt(slot, dt, rows, cols, 0); return []kernels.Matrix{m} },
			call: func(b kernels.Backend, slot []byte, key uint64) {
				m, _ := matAt(slot, dt, rows, cols, 0)
				m.Key = key
				b.MatMul(dst, m, x, n)
			},
		})
	}
	// shared: products of m matrices over one input, each with its own key
	// (drawn once for each slot's first key).
	shared := func(dt kernels.DType, m, rows, cols, n int) {
		rows = max(rows/shrink, 1)
		data, scales := matBytes(dt, rows, cols)
		x := benchVec(n * cols)
		dst := make([][]float32, m)
		for j := range dst {
			dst[j] = make([]float32, n*rows)
		}
		mats := func(slot []byte) []kernels.Matrix {
			ms, off := make([]kernels.Matrix, m), 0
			for j := range ms {
				ms[j], off = matAt(slot, dt, rows, cols, off)
			}
			return ms
		}
		keys := map[uint64][]uint64{}
		out = append(out, benchCase{
			name:  fmt.Sprintf("matmul_%s_%dx%d_t%d_shared%d_resident", dt, rows, cols, n, m),
			bytes: m * (data + scales), flops: m * 2 * rows * cols * n, resident: true, positions: n,
			mats: mats,
			call: func(b kernels.Backend, slot []byte, key uint64) {
				ms := mats(slot)
				if keys[key] == nil {
					keys[key] = []uint64{key}
					for range m - 1 {
						keys[key] = append(keys[key], kernels.NewKey())
					}
				}
				for j := range ms {
					ms[j].Key = keys[key][j]
				}
				kernels.MatMulShared(b, dst, ms, x, n)
			},
		})
	}
	matmul(kernels.BF16, 12288, 7168, 1, false) // KDA q/k/v/g projections
	matmul(kernels.I8, 12288, 7168, 1, false)   // the same in the int8 spine
	matmul(kernels.F16, 12288, 7168, 1, false)
	matmul(kernels.F32, 7168, 7168, 1, false)
	matmul(kernels.MXFP4, 3072, 3584, 1, false) // one routed expert's w1
	// Prefill: the blocked kernels, compute-bound from 64 positions on
	// (flop_ratio, against the FMA peak of the same run).
	for _, n := range []int{8, 64, 256, 512} {
		matmul(kernels.BF16, 12288, 7168, n, false)
	}
	for _, n := range []int{8, 64, 256} {
		matmul(kernels.I8, 12288, 7168, n, false)
		matmul(kernels.MXFP4, 3072, 3584, n, false) // a routed expert's w1 over the positions routed to it
	}
	// The pinned spine as a GPU keeps it (kernels.Accelerate's decode
	// rule): decode and prefill over weights already in device memory.
	matmul(kernels.BF16, 12288, 7168, 1, true)
	matmul(kernels.I8, 12288, 7168, 1, true)
	matmul(kernels.BF16, 1536, 7168, 1, true) // a 22 MB projection: near the decode threshold
	matmul(kernels.BF16, 12288, 7168, 8, true)
	matmul(kernels.BF16, 12288, 7168, 64, true)
	// The GPU's tiles themselves, with no weights crossing the bus: the
	// pinned spine's projections over a long prompt.
	matmul(kernels.BF16, 12288, 7168, 256, true)
	matmul(kernels.BF16, 12288, 7168, 512, true)
	matmul(kernels.I8, 12288, 7168, 256, true)
	// A KDA layer's q, k, v and output-gate projections over one input
	// (kernels.MatMulShared), resident: the input crosses once a piece.
	shared(kernels.BF16, 4, 12288, 7168, 256)

	// The fused routed expert over one span laid out as on disk
	// (docs/MODEL.md §4.3: w1, w2, w3, each followed by its scales;
	// 17,547,264 bytes at K3 size).
	inter, dim := max(3072/shrink/32*32, 32), 3584
	expert := func(slot []byte) kernels.Expert {
		w1, off := matAt(slot, kernels.MXFP4, inter, dim, 0)
		w2, off := matAt(slot, kernels.MXFP4, dim, inter, off)
		w3, _ := matAt(slot, kernels.MXFP4, inter, dim, off)
		return kernels.Expert{W1: w1, W2: w2, W3: w3}
	}
	d1, s1 := matBytes(kernels.MXFP4, inter, dim)
	x, dst := benchVec(dim), make([]float32, dim)
	act := kernels.Activation{Kind: kernels.SiTU, Beta: 4, LinearBeta: 25}
	out = append(out, benchCase{
		name: fmt.Sprintf("expert_ffn_mxfp4_%dx%d", inter, dim), bytes: 3 * (d1 + s1),
		mats: func(slot []byte) []kernels.Matrix { e := expert(slot); return []kernels.Matrix{e.W1, e.W2, e.W3} },
		call: func(b kernels.Backend, slot []byte, _ uint64) { b.ExpertFFN(dst, expert(slot), act, x, 1) },
	})
	// The same expert in prefill, over the positions routed to it: 64 in a
	// prompt of a few thousand tokens, about 25 in a 512-token one (K3's
	// 16 of 896 experts: bench slice --prefill 512 gives 331 experts 24.75
	// positions each), 16 and 32 around it; 256 and 512 as the GPU's share
	// of a long prompt's experts gets them (a 4,096-token slice prompt gave
	// the GPU 107 experts of 418 positions on average). The blocked kernels.
	for _, ffnN := range []int{16, 24, 32, 64, 256, 512} {
		xn, dstn := benchVec(ffnN*dim), make([]float32, ffnN*dim)
		out = append(out, benchCase{
			name: fmt.Sprintf("expert_ffn_mxfp4_%dx%d_t%d", inter, dim, ffnN), bytes: 3 * (d1 + s1), flops: 3 * 2 * inter * dim * ffnN,
			positions: ffnN,
			mats:      func(slot []byte) []kernels.Matrix { e := expert(slot); return []kernels.Matrix{e.W1, e.W2, e.W3} },
			call:      func(b kernels.Backend, slot []byte, _ uint64) { b.ExpertFFN(dstn, expert(slot), act, xn, ffnN) },
		})
	}

	// spans(k) is the matrices of k experts' spans one after another.
	span := 3 * (d1 + s1)
	spans := func(k int) func(slot []byte) []kernels.Matrix {
		return func(slot []byte) []kernels.Matrix {
			var ms []kernels.Matrix
			for i := range k {
				e := expert(slot[i*span:])
				ms = append(ms, e.W1, e.W2, e.W3)
			}
			return ms
		}
	}
	// A prompt's group as the GPU gets it: 8 experts of 256 positions each
	// in one kernels.ExpertGroupFFN call (a GPU backend runs each product
	// as one dispatch over all of them; "auto", a split, runs them one by
	// one, so the two figures of one run compare the two).
	const groupK, groupN = 8, 256
	{
		es, dsts, xs, ns := make([]kernels.Expert, groupK), make([][]float32, groupK), make([][]float32, groupK), make([]int, groupK)
		xg := benchVec(groupN * dim)
		for i := range groupK {
			dsts[i], xs[i], ns[i] = make([]float32, groupN*dim), xg, groupN
		}
		out = append(out, benchCase{
			name: fmt.Sprintf("expert_group_ffn_mxfp4_%dx%dx%d_t%d", groupK, inter, dim, groupN), bytes: groupK * span,
			flops: groupK * 3 * 2 * inter * dim * groupN, positions: groupN,
			mats: spans(groupK),
			call: func(b kernels.Backend, slot []byte, _ uint64) {
				for i := range es {
					es[i] = expert(slot[i*span:])
				}
				kernels.ExpertGroupFFN(b, dsts, es, act, xs, ns)
			},
		})
	}
	// A decode token's whole MoE layer: its 16 routed experts (K3's top-k),
	// spans one after another, in one kernels.ExpertsFFN call.
	const topK = 16
	es, dsts, xs := make([]kernels.Expert, topK), make([][]float32, topK), make([][]float32, topK)
	for i := range topK {
		dsts[i], xs[i] = make([]float32, dim), x
	}
	out = append(out, benchCase{
		name: fmt.Sprintf("experts_ffn_mxfp4_%dx%dx%d", topK, inter, dim), bytes: topK * span,
		mats: spans(topK),
		call: func(b kernels.Backend, slot []byte, _ uint64) {
			for i := range es {
				es[i] = expert(slot[i*span:])
			}
			kernels.ExpertsFFN(b, dsts, es, act, xs)
		},
	})
	return out
}

// Kernels measures, in one run, the machine's memory read bandwidth
// (kernels.MemoryRead) and each kernel's effective weight bandwidth with all
// threads and with one.
func Kernels(ctx context.Context, opt KernelsOptions) (KernelsReport, error) {
	if opt.Backend == "" {
		opt.Backend = "auto"
	}
	if opt.Threads <= 0 {
		opt.Threads = runtime.NumCPU()
	}
	if opt.MinTime <= 0 {
		opt.MinTime = 300 * time.Millisecond
	}
	opt.Shrink = max(opt.Shrink, 1)
	cases := benchCases(opt.Shrink)
	if opt.MaxPositions > 0 {
		cases = slices.DeleteFunc(cases, func(c benchCase) bool { return c.positions > opt.MaxPositions })
	}
	if opt.Only != "" {
		cases = slices.DeleteFunc(cases, func(c benchCase) bool { return !strings.Contains(c.name, opt.Only) })
		if len(cases) == 0 && !slices.ContainsFunc(attnCases(opt.Shrink), func(c attnCase) bool { return strings.Contains(c.name, opt.Only) }) {
			return KernelsReport{}, fmt.Errorf("%w: no kernel name contains %q", ErrNoKernel, opt.Only)
		}
	}
	acases := attnCases(opt.Shrink)
	if opt.MaxPositions > 0 {
		acases = slices.DeleteFunc(acases, func(c attnCase) bool { return c.positions > opt.MaxPositions })
	}
	if opt.Only != "" {
		acases = slices.DeleteFunc(acases, func(c attnCase) bool { return !strings.Contains(c.name, opt.Only) })
	}
	largest := 0
	for _, c := range cases {
		largest = max(largest, c.bytes)
	}
	if opt.BufferBytes <= 0 {
		opt.BufferBytes = 1 << 30
	}
	opt.BufferBytes = max(opt.BufferBytes, 2*largest) &^ 4095
	all, err := kernels.Open(opt.Backend, opt.Threads)
	if err != nil {
		return KernelsReport{}, err
	}
	one, err := kernels.Open(opt.Backend, 1)
	if err != nil {
		return KernelsReport{}, err
	}
	rep := KernelsReport{Backend: all.Name(), MemThreads: opt.Threads, BufferBytes: opt.BufferBytes}

	// Values chosen so that every dtype decodes to normal floats of modest
	// size: bytes 0x3c..0x41 make BF16/F16/F32 elements of about 0.01 to 10.
	buf := make([]byte, opt.BufferBytes)
	for i := range buf {
		buf[i] = 0x3c + byte(i%6)
	}
	// A pass covers a window of about 128 MiB and the next pass the next
	// window, round the buffer: short passes give the best-of a chance to
	// land in a quiet moment of a shared machine (for the limit and the
	// kernels alike), and the rotation keeps every read out of the cache.
	window := min(128<<20, len(buf)) &^ 4095
	var sink uint64 // the reads' sums, kept alive to the end
	defer runtime.KeepAlive(&sink)
	memPass := func(threads int) (func(), int) {
		next := 0
		return func() {
			lo := next * window
			if lo+window > len(buf) {
				next, lo = 0, 0
			}
			sink += kernels.MemoryRead(buf[lo:lo+window], threads)
			next++
		}, window
	}
	pass, n := memPass(opt.Threads)
	if rep.MemReadGBps, err = measure(ctx, opt.MinTime, 2, n, pass); err != nil {
		return rep, err
	}
	pass, n = memPass(1)
	if rep.MemReadOneGBps, err = measure(ctx, opt.MinTime, 2, n, pass); err != nil {
		return rep, err
	}
	if rep.FMAPeakGFLOPS, err = FMAPeak(ctx, opt.MinTime, opt.Threads); err != nil {
		return rep, err
	}
	peaker, hasGPU := kernels.DevicePeakerOf(all)
	_, gpuOwn := all.(kernels.DevicePeaker) // the backend is the GPU itself
	if hasGPU {
		if rep.GPUPeakGFLOPS, err = GPUPeak(ctx, peaker, opt.MinTime); err != nil {
			return rep, err
		}
	}
	// The machine may be shared: the limit is the best read seen in the
	// whole run (re-measured alongside every kernel), so that a busy moment
	// during the first measurement cannot flatter the ratios.
	again, n := memPass(opt.Threads)
	for _, c := range cases {
		if c.resident && kernels.IsCPU(all) {
			continue // a CPU backend ignores keys: the plain figures are these
		}
		// Slots of the buffer, 4 KiB apart, each holding one set of the
		// kernel's matrices; a pass calls the kernel on the next few slots.
		stride := (c.bytes + 4095) &^ 4095
		slots := len(buf) / stride
		for s := range slots {
			for _, m := range c.mats(buf[s*stride:]) {
				fillScales(m)
			}
		}
		perPass := max(window/stride, 1)
		keys := make([]uint64, slots)
		for i := range keys {
			if c.resident {
				keys[i] = kernels.NewKey()
			}
		}
		for _, b := range []kernels.Backend{all, one} {
			if c.resident {
				// Every slot's first call copies its matrices to the
				// device: made here, so that no timed pass pays for it
				// (a pass of one call each took the first uploads).
				for s := range slots {
					c.call(b, buf[s*stride:], keys[s])
				}
			}
			// Kernel passes alternate with all-thread read passes, so that
			// each kernel also has a limit measured under the same load.
			next := 0
			var bestK, bestM time.Duration = math.MaxInt64, math.MaxInt64
			clock, dev := backendClock(b), deviceBest{}
			start := time.Now()
			for i := 0; i < 2 || time.Since(start) < opt.MinTime; i++ {
				if err := ctx.Err(); err != nil {
					return rep, err
				}
				t := time.Now()
				again()
				bestM = min(bestM, time.Since(t))
				// One untimed call first: the read pass idled the pool's
				// helpers past spinFor, and the figure is the steady state
				// of calls back to back (a decode layer), not the wake-up.
				c.call(b, buf[next*stride:], keys[next])
				next = (next + 1) % slots
				clock.start()
				t = time.Now()
				for range perPass {
					c.call(b, buf[next*stride:], keys[next])
					next = (next + 1) % slots
				}
				took := time.Since(t)
				bestK = min(bestK, took)
				dev.add(clock, took)
			}
			gbps := float64(perPass*c.bytes) / bestK.Seconds() / 1e9
			mem := float64(n) / bestM.Seconds() / 1e9
			rep.MemReadGBps = max(rep.MemReadGBps, mem)
			r := KernelResult{Name: c.name, Threads: kernels.Threads(b), GBps: gbps, PairedRatio: gbps / mem,
				GFLOPS: float64(perPass*c.flops) / bestK.Seconds() / 1e9}
			dev.fill(&r, perPass*c.flops)
			rep.Kernels = append(rep.Kernels, r)
		}
	}
	// Attention: a prompt's causal attention over one layer's heads, with
	// the paired ratio against the best read of the run so far.
	for _, c := range acases {
		for _, b := range []kernels.Backend{all, one} {
			r, err := benchAttn(ctx, b, c, opt.MinTime)
			if err != nil {
				return rep, fmt.Errorf("%s: %w", c.name, err)
			}
			r.PairedRatio = r.GBps / rep.MemReadGBps
			rep.Kernels = append(rep.Kernels, r)
		}
	}
	// The peak again after the kernels: the best of the run, as for the read.
	if rep.FMAPeakGFLOPS, err = fmaPeakAgain(ctx, opt.MinTime, opt.Threads, rep.FMAPeakGFLOPS); err != nil {
		return rep, err
	}
	if hasGPU {
		again, err := GPUPeak(ctx, peaker, opt.MinTime)
		if err != nil {
			return rep, err
		}
		rep.GPUPeakGFLOPS = max(rep.GPUPeakGFLOPS, again)
	}
	for i := range rep.Kernels {
		k := &rep.Kernels[i]
		k.Ratio = k.GBps / rep.MemReadGBps
		k.FLOPRatio = k.GFLOPS / rep.FMAPeakGFLOPS
		if hasGPU {
			k.GPUFLOPRatio = k.GFLOPS / rep.GPUPeakGFLOPS
			k.DeviceFLOPRatio = k.DeviceGFLOPS / rep.GPUPeakGFLOPS
		}
		if gpuOwn {
			k.FLOPRatio = k.GPUFLOPRatio
		}
	}
	return rep, nil
}

// fmaSteps is the steps per lane of one FMAPeak call: a few milliseconds of
// the C loops on one core (256 lanes of AVX-512 make 2^29 operations), well
// inside the 2^24 that keep its sum exact.
const fmaSteps = 1 << 20

// FMAPeak measures the machine's fp32 multiply-add rate with threads
// goroutines (kernels.FMAPeak), for at least minTime and two passes, and
// returns the best pass in GFLOP/s (10^9 operations per second): the
// compute limit of a matmul, as the memory read is the limit of a matvec.
func FMAPeak(ctx context.Context, minTime time.Duration, threads int) (float64, error) {
	flops, sink := kernels.FMAPeak(threads, fmaSteps) // a warm-up, and the count
	defer runtime.KeepAlive(&sink)
	return measure(ctx, minTime, 2, int(flops), func() {
		_, s := kernels.FMAPeak(threads, fmaSteps)
		sink += s
	})
}

// fmaPeakAgain measures the FMA peak again and returns the better of it
// and best: on a shared machine, the limit is the best seen in the run.
func fmaPeakAgain(ctx context.Context, minTime time.Duration, threads int, best float64) (float64, error) {
	peak, err := FMAPeak(ctx, minTime, threads)
	return max(best, peak), err
}

// measure runs pass (which moves bytes bytes) at least minPasses times and
// until minTime has passed, and returns the best pass in GB/s (10^9 bytes):
// the machine's capacity, which on a shared machine an average would
// understate.
func measure(ctx context.Context, minTime time.Duration, minPasses, bytes int, pass func()) (float64, error) {
	best := time.Duration(math.MaxInt64)
	start := time.Now()
	for i := 0; i < minPasses || time.Since(start) < minTime; i++ {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		t := time.Now()
		pass()
		best = min(best, time.Since(t))
	}
	return float64(bytes) / best.Seconds() / 1e9, nil
}
