package kernels

// Split returns a backend that runs batched products (prefill: MatMul and
// ExpertFFN with n > 1) on prefill and single positions (decode) on decode.
// Its name is "PREFILL+DECODE". It is what "gpu" names: a GPU, software or
// not, for prefill and the CPU for decode.
func Split(prefill, decode Backend) Backend { return split{prefill: prefill, decode: decode} }

// AccelDecodeMinBytes is the size from which Accelerate runs a decode
// product on the GPU when the GPU holds the weights. Below it the fixed cost
// of a GPU call (a submission and a wait, tens of microseconds) exceeds
// what the CPU needs to read the weights; the figure comes from `deltafin
// bench kernels` on the device machine (kernels/README.md).
var AccelDecodeMinBytes = 4 << 20

// Accelerate returns the backend "auto" picks on a machine with a hardware
// GPU: prefill on gpu, where each weight byte serves many positions; decode
// on gpu only for weights the GPU keeps in its own memory (Matrix.Key set:
// the engine's resident spine and in-RAM experts) of at least
// AccelDecodeMinBytes, where the GPU's memory bandwidth wins, and on cpu
// otherwise: streamed experts arrive in host memory once per token, and a
// GPU that first copies them cannot beat the CPU that reads them once.
func Accelerate(gpu, cpu Backend) Backend {
	return split{prefill: gpu, decode: cpu, resident: true}
}

type split struct {
	prefill, decode Backend
	// resident: decode products over resident weights go to prefill.
	resident bool
}

func (s split) Name() string { return s.prefill.Name() + "+" + s.decode.Name() }

// onGPU reports whether a decode product over mats runs on the GPU.
func (s split) onGPU(mats ...Matrix) bool {
	if !s.resident {
		return false
	}
	n := 0
	for _, m := range mats {
		if m.Key == 0 {
			return false
		}
		n += len(m.Data) + len(m.Scales)
	}
	return n >= AccelDecodeMinBytes
}

func (s split) MatVec(dst []float32, w Matrix, x []float32) { s.MatMul(dst, w, x, 1) }

func (s split) MatMul(dst []float32, w Matrix, x []float32, n int) {
	if n > 1 || s.onGPU(w) {
		s.prefill.MatMul(dst, w, x, n)
		return
	}
	s.decode.MatMul(dst, w, x, n)
}

func (s split) ExpertFFN(dst []float32, e Expert, act Activation, x []float32, n int) {
	if n > 1 || s.onGPU(e.W1, e.W2, e.W3) {
		s.prefill.ExpertFFN(dst, e, act, x, n)
		return
	}
	s.decode.ExpertFFN(dst, e, act, x, n)
}

// Threads is the decode backend's: the figure that matters per token.
func (s split) Threads() int { return Threads(s.decode) }
