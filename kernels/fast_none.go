//go:build !cgo || !(amd64 || arm64)

package kernels

// Without cgo (or on another architecture) only the reference exists.

type isaInfo struct {
	name string
	isa  int
}

func fastISAs() []isaInfo { return nil }

type fastBackend struct{ refBackend }

func newFast(isaInfo, int) *fastBackend { return &fastBackend{} }

func (b *fastBackend) decodeRow(dst []float32, w Matrix, r int) { DecodeRow(dst, w, r) }

const cgoKernels = false

// readBytes is the Go memory read (see MemoryRead).
func readBytes(b []byte) uint64 { return readBytesGo(b) }

// fmaLoop is the Go FMA loop (see FMAPeak).
func fmaLoop(n int, a, b float32) (int, float64) { return fmaGo(n, a, b) }

// fmaLoopISA is fmaLoop: no instruction set has a loop of its own here.
func fmaLoopISA(_, n int, a, b float32) (int, float64) { return fmaGo(n, a, b) }

// deltaRuleFastest is the reference twin: there is no C kernel here.
func deltaRuleFastest(r DeltaRule) { deltaRuleRef(r) }

// shortConvFastest is the reference twin: there is no C kernel here.
func shortConvFastest(c ShortConv) { shortConvRef(c) }

// elementwiseFastest is the reference twin: there is no C kernel here.
func elementwiseFastest(op ElemOp, dst, x []float32) { elementwiseRef(op, dst, x) }
