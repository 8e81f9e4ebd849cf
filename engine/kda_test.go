package engine

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/kernels"
)

// kdaInputs draws a random head-batched KDA problem the way the layer
// produces one: unit-norm q (scaled) and k, β in (0,1), log-decays in
// (lb, 0).
func kdaInputs(r *rand.Rand, T, nh, d int, lb float32) (q, k, v, g, beta []float32) {
	n := T * nh * d
	q, k, v, g = make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
	beta = make([]float32, T*nh)
	for i := range n {
		q[i], k[i], v[i] = float32(r.NormFloat64()), float32(r.NormFloat64()), float32(r.NormFloat64())
		g[i] = lb * sigmoid(float32(r.NormFloat64()*2))
	}
	for i := 0; i < T*nh; i++ {
		l2Normalize(q[i*d : (i+1)*d])
		l2Normalize(k[i*d : (i+1)*d])
		for j := i * d; j < (i+1)*d; j++ {
			q[j] /= float32(math.Sqrt(float64(d)))
		}
		beta[i] = sigmoid(float32(r.NormFloat64()))
	}
	return
}

func TestKDAChunkedEqualsRecurrent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		T, nh, d, C  int
		lowerBound   float32
		initialState bool
	}{
		{"one chunk", 16, 2, 8, 64, -5, false},
		{"several chunks", 70, 3, 16, 16, -5, false},
		{"ragged last chunk with state", 45, 2, 32, 8, -5, true},
		{"strong decay over a long chunk", 200, 1, 16, 64, -20, true},
		{"single token", 1, 2, 8, 64, -5, true},
		{"heads in parallel, K3 width", 300, 4, 128, 64, -5, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, uint64(tt.T)))
			q, k, v, g, beta := kdaInputs(r, tt.T, tt.nh, tt.d, tt.lowerBound)
			s1 := make([]float32, tt.nh*tt.d*tt.d)
			if tt.initialState {
				for i := range s1 {
					s1[i] = float32(r.NormFloat64())
				}
			}
			s2 := append([]float32(nil), s1...)
			o1 := make([]float32, len(q))
			o2 := make([]float32, len(q))
			kdaRecurrent(context.Background(), kernels.Default(), o1, q, k, v, g, beta, s1, tt.T, tt.nh, tt.d, headSplit{})
			kdaChunked(context.Background(), kernels.Default(), o2, q, k, v, g, beta, s2, tt.T, tt.nh, tt.d, tt.C, headSplit{})
			do, _ := maxAbsDiff(o1, o2)
			ds, _ := maxAbsDiff(s1, s2)
			t.Logf("max |Δ| output %.3g, state %.3g", do, ds)
			require.LessOrEqual(t, do, 1e-5)
			require.LessOrEqual(t, ds, 1e-5)
		})
	}
}

// TestKDARecurrentByHand checks one step of the gated delta rule against
// the formula written out for d = 2.
func TestKDARecurrentByHand(t *testing.T) {
	t.Parallel()
	q := []float32{0.6, 0.8}
	k := []float32{1, 0}
	v := []float32{2, -1}
	g := []float32{float32(math.Log(0.5)), 0}
	beta := []float32{0.25}
	s := []float32{1, 2, 3, 4} // S[k][v]
	o := make([]float32, 2)
	kdaRecurrent(context.Background(), kernels.Default(), o, q, k, v, g, beta, s, 1, 1, 2, headSplit{})
	// Decay row 0 by 0.5: S = [[0.5,1],[3,4]]; δ = v − Sᵀk = [1.5,−2];
	// S += β·k·δᵀ: row 0 += [0.375,−0.5] → [[0.875,0.5],[3,4]];
	// o = Sᵀq = [0.6·0.875+0.8·3, 0.6·0.5+0.8·4] = [2.925, 3.5].
	require.InDeltaSlice(t, []float32{0.875, 0.5, 3, 4}, s, 1e-6)
	require.InDeltaSlice(t, []float32{2.925, 3.5}, o, 1e-6)
}

// TestShortConvCarriesState runs a conv whole and token by token with the
// carried window, on the reference and on this CPU's fastest kernel: the
// same bits either way on each.
func TestShortConvCarriesState(t *testing.T) {
	t.Parallel()
	const P, K, T = 3, 4, 9
	r := rand.New(rand.NewPCG(2, 2))
	x := make([]float32, T*P)
	w := make([]float32, P*K)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	for i := range w {
		w[i] = float32(r.NormFloat64())
	}
	for _, be := range []kernels.Backend{kernels.Ref(), kernels.Default()} {
		// All at once vs. token by token with the carried state.
		whole := shortConv(be, x, w, make([]float32, P*(K-1)), P, K)
		state := make([]float32, P*(K-1))
		for tk := 0; tk < T; tk++ {
			y := shortConv(be, x[tk*P:(tk+1)*P], w, state, P, K)
			require.Equal(t, whole[tk*P:(tk+1)*P], y, "%s: token %d", be.Name(), tk)
		}
		// By hand at t = 1 (window [0,0,x0,x1]): tap K−1 is the current token.
		for c := 0; c < P; c++ {
			want := silu(x[c]*w[c*K+2] + x[P+c]*w[c*K+3])
			require.InDelta(t, want, whole[P+c], 1e-6, be.Name())
		}
		// The state is the last K−1 raw inputs, oldest first.
		for c := 0; c < P; c++ {
			require.Equal(t, []float32{x[(T-3)*P+c], x[(T-2)*P+c], x[(T-1)*P+c]}, state[c*(K-1):(c+1)*(K-1)], be.Name())
		}
	}
}

// silu is x·σ(x), the reference's (σ in float64).
func silu(x float32) float32 { return x * sigmoid(x) }

// shortConvByChannel is shortConv as first written, one channel at a
// time through a sliding window: the reference its parallel, token-major
// form must match bit for bit on the ref backend.
func shortConvByChannel(x, w, state []float32, P, K int) []float32 {
	T := len(x) / P
	y := make([]float32, len(x))
	win := make([]float32, K)
	for c := 0; c < P; c++ {
		st := state[c*(K-1) : (c+1)*(K-1)]
		wc := w[c*K : (c+1)*K]
		copy(win, st)
		for t := 0; t < T; t++ {
			win[K-1] = x[t*P+c]
			var s float32
			for j := 0; j < K; j++ {
				s += win[j] * wc[j]
			}
			y[t*P+c] = silu(s)
			copy(win, win[1:])
		}
		copy(st, win[:K-1])
	}
	return y
}

// TestShortConvMatchesByChannel runs a prompt-sized conv (split over the
// cores) and short ones (1 and 2 tokens, fewer than the window) against
// the channel-at-a-time reference: on the ref backend outputs and carried
// state bit for bit, on the fastest kernel the state bit for bit and the
// outputs within a few ulp of σ, and its prompt-sized call the bits of
// its decode steps; the window a verify pass rolls back to after each of
// its positions (convWindow) is the state the conv of those positions
// leaves.
func TestShortConvMatchesByChannel(t *testing.T) {
	t.Parallel()
	const P, K = 1536, 4
	r := rand.New(rand.NewPCG(5, 5))
	w := make([]float32, P*K)
	st0 := make([]float32, P*(K-1))
	for _, v := range [][]float32{w, st0} {
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
	}
	for _, T := range []int{1, 2, 3, 70} {
		x := make([]float32, T*P)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		stB := slices.Clone(st0)
		want := shortConvByChannel(x, w, stB, P, K)
		stA := slices.Clone(st0)
		require.Equal(t, want, shortConv(kernels.Ref(), x, w, stA, P, K), "T=%d outputs", T)
		require.Equal(t, stB, stA, "T=%d state", T)

		stF := slices.Clone(st0)
		fast := shortConv(kernels.Default(), x, w, stF, P, K)
		require.Equal(t, stB, stF, "T=%d state, fastest kernel", T)
		require.InDeltaSlice(t, want, fast, 1e-5, "T=%d outputs, fastest kernel", T)
		stD := slices.Clone(st0)
		for tk := 0; tk < T; tk++ {
			y := shortConv(kernels.Default(), x[tk*P:(tk+1)*P], w, stD, P, K)
			require.Equal(t, fast[tk*P:(tk+1)*P], y, "T=%d: decode step %d, fastest kernel", T, tk)
		}

		for n := 0; n <= min(T, 5); n++ {
			st := slices.Clone(st0)
			shortConvByChannel(x[:n*P], w, st, P, K)
			win := make([]float32, P*(K-1))
			convWindow(win, st0, x[:n*P], P, K)
			require.Equal(t, st, win, "T=%d: the window after %d positions", T, n)
		}
	}
}

func TestKDAGate(t *testing.T) {
	t.Parallel()
	eachCPUBackend(t, func(t *testing.T, be kernels.Backend) {
		lb := float32(-5)
		// K3: one rate per head, broadcast over the head's channels (head 0
		// decays at exp(0) = 1, head 1 at exp(ln 2) = 2 on both its
		// channels); two tokens, the second the first's pre-activations
		// negated.
		aLog := []float32{0, float32(math.Log(2))} // [nh=2]
		dt := []float32{0.5, -1, 0, 0}             // [nh=2, d=2]
		g := []float32{0.5, 1, 3, -2, -0.5, -1, -3, 2}
		kdaGate(be, g, kdaDecay(aLog), dt, &lb, 2, 2)
		require.InDeltaSlice(t, []float32{-5 * sigmoid(1), -5 * sigmoid(0), -5 * sigmoid(2*3), -5 * sigmoid(2*-2),
			-5 * sigmoid(0), -5 * sigmoid(-2), -5 * sigmoid(2*-3), -5 * sigmoid(2*2)}, g, 1e-6)

		aLogHead := []float32{0, float32(math.Log(3))} // per head (Kimi-Linear)
		g = []float32{0.5, 1, 3, -2}
		kdaGate(be, g, kdaDecay(aLogHead), dt, nil, 2, 2)
		require.InDeltaSlice(t, []float32{-softplus(1), -softplus(0), -3 * softplus(3), -3 * softplus(-2)}, g, 1e-6)
	})
	require.Equal(t, float32(25), softplus(25))
}
