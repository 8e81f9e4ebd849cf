package kernels

import (
	"fmt"
	"math"
)

// The causal short convolution of a KDA layer (docs/MODEL.md §5.5), per
// channel c over time with a window of K taps, followed by SiLU:
//
//	y[t,c] = silu(Σ_j window_t[c,j] · W[c,j]),  silu(s) = s·σ(s)
//
// window_t[c] is the K raw inputs of channel c ending at token t (tap K−1
// is token t itself), the carried State supplying those before token 0.
// The sum runs j = 0..K−1 in that order. Each output reads only its own
// token's window, so the SIMD kernels (kern_attn_tmpl.h) go token by
// token over vectors of channels, reading X row by row, and a prompt run
// in one call and the same tokens one decode step at a time give the same
// bits on one backend.

// ShortConv is the convolution of channels [C0, C1) over T tokens: X and
// Y [T, P] row-major (Y written only in those channels), W [P, K], State
// [P, K−1] (the last K−1 raw inputs of each channel, oldest first),
// updated to those after the last token (still partly the old window
// when T < K−1). T = 0 leaves State untouched. Y must not overlap X or
// State.
type ShortConv struct {
	Y, X, W, State  []float32
	T, P, K, C0, C1 int
}

// shortConver is a backend with its own short-convolution kernel.
type shortConver interface {
	shortConv(c ShortConv)
}

// RunShortConv runs c on be's CPU kernel, routed as RunDeltaRule is: a
// fast backend's own instruction set, a split backend's decode side, the
// reference twin on ref, this CPU's fastest kernel for any other backend
// (a GPU's: the conv is a few multiply-adds per element, cheaper on the
// CPU than the copies). Shapes are the caller's contract: a mismatch
// panics.
func RunShortConv(be Backend, c ShortConv) {
	c.mustShape()
	if c.T == 0 || c.C0 == c.C1 {
		return
	}
	if sc, ok := be.(shortConver); ok {
		sc.shortConv(c)
		return
	}
	shortConvFastest(c)
}

func (c ShortConv) mustShape() {
	ok := c.T >= 0 && c.K >= 1 && c.P >= 0 && 0 <= c.C0 && c.C0 <= c.C1 && c.C1 <= c.P &&
		len(c.X) >= c.T*c.P && len(c.Y) >= c.T*c.P && len(c.W) >= c.P*c.K && len(c.State) >= c.P*(c.K-1)
	if !ok {
		panic(fmt.Sprintf("kernels: ShortConv T %d P %d K %d channels [%d, %d): x %d y %d w %d state %d",
			c.T, c.P, c.K, c.C0, c.C1, len(c.X), len(c.Y), len(c.W), len(c.State)))
	}
}

func (refBackend) shortConv(c ShortConv) { shortConvRef(c) }

// The split backend's conv runs where its decode steps run, as its delta
// rule does.
func (s split) shortConv(c ShortConv) { RunShortConv(s.decode, c) }

// shortConvRef is the reference twin: the engine's token-major loop as it
// was, σ in float64 (the engine's sigmoid), so the ref backend's bits are
// those of before the kernel.
func shortConvRef(c ShortConv) {
	P, K, ks := c.P, c.K, c.K-1
	x, st := c.X, c.State
	// in is the raw input at time tt of channel ch: x for tt ≥ 0, the
	// carried window before it.
	in := func(tt, ch int) float32 {
		if tt >= 0 {
			return x[tt*P+ch]
		}
		return st[ch*ks+ks+tt]
	}
	for t := 0; t < c.T; t++ {
		for ch := c.C0; ch < c.C1; ch++ {
			wc := c.W[ch*K : (ch+1)*K]
			var s float32
			for j := 0; j < K; j++ {
				s += in(t-ks+j, ch) * wc[j]
			}
			c.Y[t*P+ch] = s * float32(1/(1+math.Exp(-float64(s))))
		}
	}
	win := make([]float32, ks)
	for ch := c.C0; ch < c.C1; ch++ {
		for i := range win {
			win[i] = in(c.T-ks+i, ch)
		}
		copy(st[ch*ks:(ch+1)*ks], win)
	}
}
