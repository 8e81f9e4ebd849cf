package conformance

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/kernels"
)

// LatentCase is a shape of latent attention: QLoRA is the queries' latent
// width (0: no q_b, the queries given), R the keys' and values'; Keyed
// gives both products Keys (a GPU keeps them, and runs the whole call on
// the device).
type LatentCase struct {
	T, Past, Heads, NoPE, RoPE, DV, QLoRA, R int
	DType                                    kernels.DType
	Keyed                                    bool
}

func (c LatentCase) String() string {
	return fmt.Sprintf("%s/T%d/past%d/h%d/%d+%dx%d/q%d/r%d/keyed=%v", c.DType, c.T, c.Past, c.Heads, c.NoPE, c.RoPE, c.DV, c.QLoRA, c.R, c.Keyed)
}

// LatentCases: one query row and several; with and without q_b; a cache
// before the new rows; a prompt over more than one GPU submission of
// attention rows (1,024); weights the GPU keeps and weights it does not;
// and a head of K3's widths (128 + 64, 128) over a few heads.
func LatentCases() []LatentCase {
	return []LatentCase{
		{T: 37, Heads: 3, NoPE: 16, RoPE: 8, DV: 16, QLoRA: 24, R: 20, DType: kernels.BF16, Keyed: true},
		{T: 70, Past: 10, Heads: 2, NoPE: 24, RoPE: 8, DV: 32, R: 16, DType: kernels.I8, Keyed: true},
		{T: 2, Past: 5, Heads: 4, NoPE: 8, RoPE: 4, DV: 8, QLoRA: 16, R: 12, DType: kernels.BF16, Keyed: true},
		{T: 1, Past: 9, Heads: 2, NoPE: 8, RoPE: 4, DV: 8, QLoRA: 16, R: 12, DType: kernels.BF16, Keyed: true},
		{T: 1100, Past: 3, Heads: 2, NoPE: 8, RoPE: 8, DV: 16, QLoRA: 16, R: 16, DType: kernels.BF16, Keyed: true},
		{T: 40, Past: 7, Heads: 2, NoPE: 16, RoPE: 8, DV: 16, QLoRA: 16, R: 16, DType: kernels.BF16},
		{T: 130, Heads: 3, NoPE: 128, RoPE: 64, DV: 128, QLoRA: 64, R: 64, DType: kernels.BF16, Keyed: true},
	}
}

// NewLatent makes c's inputs: latents of unit size, weights of real ones,
// cached keys and values, and every output zeroed. The keys' latents and
// their RoPE columns share rows of R+RoPE, as kv_a gives them.
func NewLatent(rng *rand.Rand, c LatentCase) kernels.LatentAttn {
	n, qk := c.Past+c.T, c.NoPE+c.RoPE
	a := kernels.LatentAttn{
		T: c.T, Past: c.Past, Heads: c.Heads, NoPE: c.NoPE, RoPE: c.RoPE, DV: c.DV,
		Scale: float32(1 / math.Sqrt(float64(qk))),
		WKV:   RandMatrix(rng, c.DType, c.Heads*(c.NoPE+c.DV), c.R),
		Lat:   RandVec(rng, c.T*c.R),
		KPE:   RandVec(rng, c.T*(c.R+c.RoPE)), KPEStride: c.R + c.RoPE, KPEOff: c.R,
		K: RandVec(rng, n*c.Heads*qk), V: RandVec(rng, n*c.Heads*c.DV),
		KV: make([]float32, c.T*c.Heads*(c.NoPE+c.DV)), Dst: make([]float32, c.T*c.Heads*c.DV),
	}
	if c.QLoRA > 0 {
		a.WQ = RandMatrix(rng, c.DType, c.Heads*qk, c.QLoRA)
		a.QIn = RandVec(rng, c.T*c.QLoRA)
	} else {
		a.QIn = RandVec(rng, c.T*c.Heads*qk)
	}
	if c.Keyed {
		a.WKV.Key = kernels.NewKey()
		if c.QLoRA > 0 {
			a.WQ.Key = kernels.NewKey()
		}
	}
	return a
}

// cloneLatent gives a its own outputs (Dst, K, V, KV).
func cloneLatent(a kernels.LatentAttn) kernels.LatentAttn {
	a.Dst, a.K, a.V, a.KV = slices.Clone(a.Dst), slices.Clone(a.K), slices.Clone(a.V), slices.Clone(a.KV)
	return a
}

// latentAttention holds kernels.LatentAttention on every backend to the
// steps on the same backend (kernels.LatentSteps), bit for bit: the
// outputs, kv_b's outputs, and the keys and values written after the
// cache, whose cached rows stay as they were. The steps themselves are
// held to the reference by the MatMul and Attention suites.
func latentAttention(t *testing.T, bs []kernels.Backend) {
	cases := LatentCases()
	parallel(t, len(cases), 37, func(i int) string { return cases[i].String() }, func(t *testing.T, rng *rand.Rand, i int) {
		c := cases[i]
		a := NewLatent(rng, c)
		each(t, bs, func(t *testing.T, b kernels.Backend) {
			want, got := cloneLatent(a), cloneLatent(a)
			require.NoError(t, kernels.LatentSteps(t.Context(), b, want))
			require.NoError(t, kernels.LatentAttention(t.Context(), b, got))
			require.Equal(t, want.Dst, got.Dst, "outputs")
			require.Equal(t, want.KV, got.KV, "kv_b's outputs")
			require.Equal(t, want.K, got.K, "keys")
			require.Equal(t, want.V, got.V, "values")
			cached := c.Past * c.Heads
			require.Equal(t, a.K[:cached*(c.NoPE+c.RoPE)], got.K[:cached*(c.NoPE+c.RoPE)], "the cached keys")
		})
	})
}
