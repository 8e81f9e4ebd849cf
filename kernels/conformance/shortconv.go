package conformance

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/kernels"
)

// ShortConvCase is one shape of kernels.RunShortConv: T tokens of channels
// [C0, C1) inside rows of P, K taps, inputs (x and the window) of standard
// deviation Scale (50 puts the sums near ±100, where σ saturates).
type ShortConvCase struct {
	T, P, K, C0, C1 int
	Scale           float64
}

func (c ShortConvCase) String() string {
	return fmt.Sprintf("T%d/P%d[%d,%d)/K%d/x%g", c.T, c.P, c.C0, c.C1, c.K, c.Scale)
}

// ShortConvCases are K3's width (P = 12288 per projection, K = 4) and a
// slice of it as a worker of the engine gets, widths with a vector tail
// on every instruction set (37, 5) or none (128), K of 1 and 3, T of 0,
// 1, 2 (fewer tokens than the window), 5 and 70 (across the channel
// chunk's many tokens), and sums large enough to saturate σ.
func ShortConvCases() []ShortConvCase {
	return []ShortConvCase{
		{T: 70, P: 128, K: 4, C0: 0, C1: 128, Scale: 1},
		{T: 70, P: 37, K: 4, C0: 0, C1: 37, Scale: 1},
		{T: 5, P: 12288, K: 4, C0: 0, C1: 12288, Scale: 1},
		{T: 9, P: 12288, K: 4, C0: 3077, C1: 6150, Scale: 1},
		{T: 2, P: 37, K: 4, C0: 0, C1: 37, Scale: 1},
		{T: 1, P: 128, K: 4, C0: 16, C1: 99, Scale: 1},
		{T: 0, P: 37, K: 4, C0: 0, C1: 37, Scale: 1},
		{T: 70, P: 37, K: 1, C0: 0, C1: 37, Scale: 1},
		{T: 7, P: 130, K: 3, C0: 1, C1: 130, Scale: 1},
		{T: 1, P: 5, K: 3, C0: 0, C1: 5, Scale: 1},
		{T: 70, P: 128, K: 4, C0: 0, C1: 128, Scale: 50},
		{T: 6, P: 37, K: 3, C0: 2, C1: 37, Scale: 50},
	}
}

// NewShortConv fills a call of shape c: x and the window normal of
// standard deviation c.Scale, weights standard normal, Y zero.
func NewShortConv(rng *rand.Rand, c ShortConvCase) kernels.ShortConv {
	scaled := func(n int) []float32 {
		v := RandVec(rng, n)
		for i := range v {
			v[i] *= float32(c.Scale)
		}
		return v
	}
	return kernels.ShortConv{
		Y: make([]float32, c.T*c.P), X: scaled(c.T * c.P), W: RandVec(rng, c.P*c.K), State: scaled(c.P * (c.K - 1)),
		T: c.T, P: c.P, K: c.K, C0: c.C0, C1: c.C1,
	}
}

func cloneShortConv(c kernels.ShortConv) kernels.ShortConv {
	c.Y = make([]float32, len(c.Y))
	c.State = append([]float32(nil), c.State...)
	return c
}

// ShortConvOracle is the conv in float64 from the same fp32 inputs: the
// outputs of channels [C0, C1) packed [T, C1−C0] and the new window of
// those channels [C1−C0, K−1].
func ShortConvOracle(c kernels.ShortConv) (y, st []float64) {
	n, ks := c.C1-c.C0, c.K-1
	in := func(tt, ch int) float64 {
		if tt >= 0 {
			return float64(c.X[tt*c.P+ch])
		}
		return float64(c.State[ch*ks+ks+tt])
	}
	y = make([]float64, c.T*n)
	for t := 0; t < c.T; t++ {
		for ch := c.C0; ch < c.C1; ch++ {
			var s float64
			for j := 0; j < c.K; j++ {
				s += in(t-ks+j, ch) * float64(c.W[ch*c.K+j])
			}
			y[t*n+ch-c.C0] = s / (1 + math.Exp(-s))
		}
	}
	st = make([]float64, n*ks)
	for ch := c.C0; ch < c.C1; ch++ {
		for i := 0; i < ks; i++ {
			st[(ch-c.C0)*ks+i] = in(c.T-ks+i, ch)
		}
	}
	return y, st
}

// ShortConvResult is a call's outputs and window in ShortConvOracle's
// layout, as float32.
func ShortConvResult(c kernels.ShortConv) (y, st []float32) {
	n, ks := c.C1-c.C0, c.K-1
	y = make([]float32, c.T*n)
	for t := 0; t < c.T; t++ {
		copy(y[t*n:(t+1)*n], c.Y[t*c.P+c.C0:])
	}
	st = make([]float32, n*ks)
	copy(st, c.State[c.C0*ks:c.C1*ks])
	return y, st
}

// ShortConvTol is the outputs' tolerance: 4·E, E the largest distance of
// the reference twin (an fp32 sum, σ in float64) to the oracle in this
// case, measured here, as DeltaRuleTol derives its own. Another kernel's
// sum rounds as much (fused or not) and a vectorised exp adds a few ulp
// of σ, well inside the factor; the floor of 8·U times the largest output
// keeps a case the twin gets exact from demanding exact bits. A window
// off by one token, orders of magnitude above rounding, fails it. The
// window itself is a copy: it must be exact.
func ShortConvTol(c kernels.ShortConv) float64 {
	ref := cloneShortConv(c)
	kernels.RunShortConv(kernels.Ref(), ref)
	got, _ := ShortConvResult(ref)
	want, _ := ShortConvOracle(c)
	var worst, mag float64
	for i, w := range want {
		worst = max(worst, math.Abs(float64(got[i])-w))
		mag = max(mag, math.Abs(w))
	}
	return 4 * max(worst, 8*U*mag)
}

// ShortConv holds kernels.RunShortConv on every backend to the float64
// oracle within ShortConvTol, the new window exactly; checks that
// channels outside [C0, C1) are left alone, that no output is NaN, that
// backends of one name give the same bits whatever their threads, and
// that the tokens one call each (decode steps, the window carried in
// place) give the bits of one call over all of them, on every backend.
func ShortConv(t *testing.T, bs ...kernels.Backend) {
	t.Helper()
	require.NotEmpty(t, bs)
	for i, cs := range ShortConvCases() {
		t.Run(cs.String(), func(t *testing.T) {
			c := NewShortConv(rand.New(rand.NewPCG(37, uint64(i))), cs)
			wy, ws := ShortConvOracle(c)
			tol := fill(len(wy), ShortConvTol(c))
			wantY, wantS := toF32(wy), toF32(ws)
			bits := map[string][]float32{}
			for _, b := range bs {
				got := cloneShortConv(c)
				kernels.RunShortConv(b, got)
				y, s := ShortConvResult(got)
				for _, v := range y {
					require.False(t, math.IsNaN(float64(v)), "%s: NaN", label(b))
				}
				RequireWithin(t, wantY, y, tol, label(b)+": y")
				require.Equal(t, wantS, s, "%s: window", label(b))
				if cs.T == 0 {
					require.Equal(t, c.State, got.State, "%s: T = 0 wrote the window", label(b))
				}
				for tt := 0; tt < cs.T; tt++ {
					for ch := 0; ch < cs.P; ch++ {
						if ch < cs.C0 || ch >= cs.C1 {
							require.Zero(t, got.Y[tt*cs.P+ch], "%s: wrote channel %d outside the range", label(b), ch)
						}
					}
				}
				if cs.K > 1 {
					require.Equal(t, c.State[:cs.C0*(cs.K-1)], got.State[:cs.C0*(cs.K-1)], "%s: window below C0", label(b))
					require.Equal(t, c.State[cs.C1*(cs.K-1):], got.State[cs.C1*(cs.K-1):], "%s: window past C1", label(b))
				}
				if len(tol) > 0 {
					t.Logf("%s: worst |Δ|/tol %.3g", label(b), worstRatio(wantY, y, tol))
				}
				if prev, ok := bits[b.Name()]; ok {
					require.Equal(t, prev, y, "%s: the bits depend on the threads", label(b))
				}
				bits[b.Name()] = y

				step := cloneShortConv(c)
				for tt := 0; tt < cs.T; tt++ {
					one := step
					one.T = 1
					one.X, one.Y = step.X[tt*cs.P:], step.Y[tt*cs.P:]
					kernels.RunShortConv(b, one)
				}
				sy, ss := ShortConvResult(step)
				require.Equal(t, y, sy, "%s: token by token, outputs", label(b))
				require.Equal(t, s, ss, "%s: token by token, window", label(b))
			}
		})
	}
}

// BenchShortConv times kernels.RunShortConv on each backend over T tokens
// of P channels and K taps (the first backend against the others in the
// same run), in output elements per second (G/s).
func BenchShortConv(b *testing.B, T, P, K int, bs ...kernels.Backend) {
	cs := ShortConvCase{T: T, P: P, K: K, C1: P, Scale: 1}
	c := NewShortConv(rand.New(rand.NewPCG(1, 1)), cs)
	for _, be := range bs {
		b.Run(fmt.Sprintf("%s/%s", label(be), cs), func(b *testing.B) {
			for b.Loop() {
				kernels.RunShortConv(be, c)
			}
			b.ReportMetric(float64(T*P)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
		})
	}
}
