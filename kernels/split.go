package kernels

// Split returns a backend that runs batched products (prefill: MatMul and
// ExpertFFN with n > 1) on prefill and single positions (decode) on decode.
// A GPU wins prefill, where each weight byte serves many positions; decode
// reads each weight once per token, and there a GPU that reads the weights
// from host memory is slower than the CPU, so decode stays on the CPU unless
// `deltafin bench kernels` shows otherwise (then name the GPU backend
// itself). Its name is "PREFILL+DECODE".
func Split(prefill, decode Backend) Backend { return split{prefill, decode} }

type split struct{ prefill, decode Backend }

func (s split) Name() string { return s.prefill.Name() + "+" + s.decode.Name() }

func (s split) pick(n int) Backend {
	if n > 1 {
		return s.prefill
	}
	return s.decode
}

func (s split) MatVec(dst []float32, w Matrix, x []float32) { s.decode.MatVec(dst, w, x) }

func (s split) MatMul(dst []float32, w Matrix, x []float32, n int) { s.pick(n).MatMul(dst, w, x, n) }

func (s split) ExpertFFN(dst []float32, e Expert, act Activation, x []float32, n int) {
	s.pick(n).ExpertFFN(dst, e, act, x, n)
}

// Threads is the decode backend's: the figure that matters per token.
func (s split) Threads() int { return Threads(s.decode) }
