package kernels

// Split returns a backend that runs batched products (prefill: MatMul and
// ExpertFFN with n > 1) on prefill and single positions (decode) on decode.
// Its name is "PREFILL+DECODE". It is what "gpu" names: a GPU, software or
// not, for prefill and the CPU for decode.
func Split(prefill, decode Backend) Backend { return split{prefill: prefill, decode: decode} }

// The rule Accelerate follows, from `deltafin bench kernels` on the device
// machine (an NVIDIA H200 through Vulkan beside 16 AVX-512 cores reading
// 108 GB/s; kernels/README.md has the figures). A GPU call has a fixed cost
// (a submission and a wait: about 0.2 ms there), weights that are not on the
// device cross the bus at about 3.5 GB/s, and the CPU's batched product
// slows down in proportion to the positions while the GPU's does not.
var (
	// AccelDecodeMinBytes: a single position over resident weights runs on
	// the GPU from this size (176 MB: GPU 113-285 GB/s against the CPU's
	// 104-108; 22 MB: 55-90 against about 100).
	AccelDecodeMinBytes = 32 << 20
	// AccelResidentMinPositions: a batch over resident weights runs on the
	// GPU from this many positions (8: a tie; 64: 30-32 GB/s of weights
	// against the CPU's 4.6).
	AccelResidentMinPositions = 16
	// AccelStreamedMinPositions: a batch over weights the GPU must first
	// receive (streamed experts) runs there from this many positions (the
	// GPU's 3.4-3.8 GB/s against the CPU's 32 at 8 positions and 4.6 at 64).
	AccelStreamedMinPositions = 96
)

// Accelerate returns the backend "auto" picks on a machine with a hardware
// GPU: products go to gpu where it wins by the rule above, the rest to cpu.
// Resident weights are those with a Matrix.Key (the engine's pinned spine
// and in-RAM experts), which the GPU keeps in its memory; streamed experts
// arrive in host memory once per token and mostly stay on the CPU.
// A GPU backend that does not keep keyed weights (a budget of zero, as on
// unified memory, where a copy would double the pinned spine in RAM) gets
// every product as streamed.
func Accelerate(gpu, cpu Backend) Backend {
	keeps := false
	if k, ok := gpu.(interface{ KeepsResident() bool }); ok {
		keeps = k.KeepsResident()
	}
	return split{prefill: gpu, decode: cpu, rule: true, keeps: keeps}
}

type split struct {
	prefill, decode Backend
	// rule: Accelerate's rule instead of "every batch to prefill".
	rule bool
	// keeps: the prefill backend keeps keyed weights in its memory.
	keeps bool
}

func (s split) Name() string { return s.prefill.Name() + "+" + s.decode.Name() }

// onGPU reports whether a product over mats for n positions goes to the
// prefill (GPU) backend.
func (s split) onGPU(n int, mats ...Matrix) bool {
	if !s.rule {
		return n > 1
	}
	bytes, resident := 0, s.keeps
	for _, m := range mats {
		resident = resident && m.Key != 0
		bytes += len(m.Data) + len(m.Scales)
	}
	switch {
	case !resident:
		return n >= AccelStreamedMinPositions
	case n == 1:
		return bytes >= AccelDecodeMinBytes
	}
	return n >= AccelResidentMinPositions
}

func (s split) MatVec(dst []float32, w Matrix, x []float32) { s.MatMul(dst, w, x, 1) }

func (s split) MatMul(dst []float32, w Matrix, x []float32, n int) {
	if s.onGPU(n, w) {
		s.prefill.MatMul(dst, w, x, n)
		return
	}
	s.decode.MatMul(dst, w, x, n)
}

func (s split) ExpertFFN(dst []float32, e Expert, act Activation, x []float32, n int) {
	if s.onGPU(n, e.W1, e.W2, e.W3) {
		s.prefill.ExpertFFN(dst, e, act, x, n)
		return
	}
	s.decode.ExpertFFN(dst, e, act, x, n)
}

// Threads is the decode backend's: the figure that matters per token.
func (s split) Threads() int { return Threads(s.decode) }

// expertsFFN hands a layer's experts to the decode backend as one call when
// the rule sends every one of them there (streamed experts: always in
// decode), so that "auto" with a GPU keeps the CPU's one pool call per
// layer; otherwise it declines and ExpertsFFN runs them one by one.
func (s split) expertsFFN(dst [][]float32, es []Expert, act Activation, x [][]float32) bool {
	for _, e := range es {
		if s.onGPU(1, e.W1, e.W2, e.W3) {
			return false
		}
	}
	m, ok := s.decode.(expertsFFNer)
	return ok && m.expertsFFN(dst, es, act, x)
}
