package conformance

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/kernels"
)

// AttnCase is one shape of kernels.Attention.
type AttnCase struct {
	T, Past, Heads, QK, DV int
	// Spread multiplies the queries: large values make peaked rows whose
	// maximum moves from tile to tile (the online rescaling).
	Spread float32
	// Growing makes key norms grow with the position, so that each tile
	// raises every row's maximum.
	Growing bool
}

func (c AttnCase) String() string {
	s := fmt.Sprintf("T%d/past%d/h%d/qk%d/dv%d/x%g", c.T, c.Past, c.Heads, c.QK, c.DV, c.Spread)
	if c.Growing {
		s += "/growing"
	}
	return s
}

// AttnCases are the shapes every Attender is held to: k3-tiny's heads over
// several tiles, a decode token over a long cache, a prompt continuing a
// cache at an offset inside a tile, K3's head shape, odd widths.
func AttnCases() []AttnCase {
	return []AttnCase{
		{T: 200, Heads: 4, QK: 24, DV: 16, Spread: 1},
		{T: 200, Heads: 4, QK: 24, DV: 16, Spread: 6},
		{T: 150, Heads: 2, QK: 24, DV: 16, Spread: 1, Growing: true},
		{T: 1, Past: 300, Heads: 4, QK: 24, DV: 16, Spread: 2},
		{T: 70, Past: 130, Heads: 4, QK: 24, DV: 16, Spread: 2},
		{T: 130, Heads: 2, QK: 192, DV: 128, Spread: 2},
		{T: 67, Past: 1, Heads: 3, QK: 5, DV: 3, Spread: 3},
		{T: 5, Heads: 1, QK: 1, DV: 1, Spread: 1},
	}
}

// NewAttn fills a call of shape c with random queries, keys and values.
func NewAttn(rng *rand.Rand, c AttnCase) kernels.Attn {
	n := c.Past + c.T
	a := kernels.Attn{
		Q: RandVec(rng, c.T*c.Heads*c.QK), K: RandVec(rng, n*c.Heads*c.QK), V: RandVec(rng, n*c.Heads*c.DV),
		Dst: make([]float32, c.T*c.Heads*c.DV), T: c.T, Past: c.Past, Heads: c.Heads, QK: c.QK, DV: c.DV,
		Scale: float32(1 / math.Sqrt(float64(c.QK))),
	}
	for i := range a.Q {
		a.Q[i] *= c.Spread
	}
	if c.Growing {
		for p := range n {
			f := 1 + 4*float32(p)/float32(n)
			for i := range c.Heads * c.QK {
				a.K[p*c.Heads*c.QK+i] = max(a.K[p*c.Heads*c.QK+i], 0) * f
				a.Q[(p%c.T)*c.Heads*c.QK+i] = float32(math.Abs(float64(a.Q[(p%c.T)*c.Heads*c.QK+i])))
			}
		}
	}
	return a
}

// AttnTol bounds |ref − got| per output element of a: the score error of a
// dot product of QK terms (4·QK·U times the largest Σ|q·k|·scale of the
// row) moves the output by at most that times the largest |v|; the
// normalising sum over n keys and the exponentials add a few ulps each.
func AttnTol(a kernels.Attn) []float64 {
	nh, qk, dv := a.Heads, a.QK, a.DV
	tol := make([]float64, len(a.Dst))
	for t := 0; t < a.T; t++ {
		n := a.Past + t + 1
		for h := 0; h < nh; h++ {
			var sMax, vMax float64
			for p := 0; p < n; p++ {
				var s float64
				for c := 0; c < qk; c++ {
					s += math.Abs(float64(a.Q[(t*nh+h)*qk+c]) * float64(a.K[(p*nh+h)*qk+c]))
				}
				sMax = max(sMax, s*float64(a.Scale))
				for i := 0; i < dv; i++ {
					vMax = max(vMax, math.Abs(float64(a.V[(p*nh+h)*dv+i])))
				}
			}
			e := (4*float64(qk)*sMax + 8*math.Sqrt(float64(n)) + 16) * U * vMax
			for i := 0; i < dv; i++ {
				tol[(t*nh+h)*dv+i] = e
			}
		}
	}
	return tol
}

// Attention holds kernels.Attention on every backend (its own kernels where
// it is an Attender, the plain-Go tiles otherwise) to kernels.AttentionRef,
// and backends of one name to the same bits whatever their threads.
func Attention(t *testing.T, bs ...kernels.Backend) {
	t.Helper()
	require.NotEmpty(t, bs)
	for i, c := range AttnCases() {
		t.Run(c.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(11, uint64(i)))
			a := NewAttn(rng, c)
			want := make([]float32, len(a.Dst))
			ref := a
			ref.Dst = want
			kernels.AttentionRef(ref)
			tol := AttnTol(a)
			bits := map[string][]float32{}
			for _, b := range bs {
				got := a
				got.Dst = make([]float32, len(a.Dst))
				require.NoError(t, kernels.Attention(t.Context(), b, got))
				RequireWithin(t, want, got.Dst, tol, label(b))
				t.Logf("%s: worst |Δ|/tol %.3g", label(b), worstRatio(want, got.Dst, tol))
				if prev, ok := bits[b.Name()]; ok {
					require.Equal(t, prev, got.Dst, "%s: the bits depend on the threads", label(b))
				}
				bits[b.Name()] = got.Dst
			}
		})
	}
	t.Run("Cancelled", func(t *testing.T) {
		a := NewAttn(rand.New(rand.NewPCG(12, 0)), AttnCase{T: 300, Heads: 4, QK: 24, DV: 16, Spread: 1})
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		for _, b := range bs {
			require.ErrorIs(t, kernels.Attention(ctx, b, a), context.Canceled, label(b))
		}
	})
	t.Run("Empty", func(t *testing.T) {
		for _, b := range bs {
			require.NoError(t, kernels.Attention(t.Context(), b, kernels.Attn{Past: 3, Heads: 1, QK: 1, DV: 1, K: make([]float32, 3), V: make([]float32, 3)}), label(b))
		}
	})
}

// worstRatio is the largest |want − got| / tol.
func worstRatio(want, got []float32, tol []float64) float64 {
	var r float64
	for i := range want {
		r = max(r, math.Abs(float64(want[i])-float64(got[i]))/tol[i])
	}
	return r
}

// BenchAttention times kernels.Attention on each backend over one layer's
// prefill at the given shapes (each backend after the first is the limit
// the first is reported against, in the same run). GFLOP/s counts
// 2·(qk+dv) per visible (query, key) pair and head.
func BenchAttention(b *testing.B, cases []AttnCase, bs ...kernels.Backend) {
	for _, c := range cases {
		a := NewAttn(rand.New(rand.NewPCG(1, 1)), c)
		flops := float64(c.T) * float64(c.T+1) / 2 * float64(c.Heads) * 2 * float64(c.QK+c.DV)
		for _, be := range bs {
			b.Run(fmt.Sprintf("%s/%s", label(be), c), func(b *testing.B) {
				for b.Loop() {
					if err := kernels.Attention(b.Context(), be, a); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
