package conformance

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/kernels"
)

// expertGroupFFN: kernels.ExpertGroupFFN must give, bit for bit, what
// ExpertFFN gives expert by expert on the same backend, each expert over
// its own positions (a GPU runs the group's products as one dispatch each,
// mmgroup.comp). Counts straddle the 64-position tiles and include single
// positions (run alone), rows not a multiple of the 128-row tile, a group
// of one, rows that are not whole words (one by one), and a keyed expert in
// the middle of a group (kept resident, so run alone, the group cut around
// it); K3's experts with -tags slow.
func expertGroupFFN(t *testing.T, bs []kernels.Backend) {
	act := acts[1]
	type shape struct {
		dt         kernels.DType
		inter, dim int
		ns         []int
		keyed      int // an expert made keyed, -1 none
	}
	shapes := []shape{
		{kernels.MXFP4, 96, 256, []int{40, 1, 130, 64, 7}, -1},
		{kernels.BF16, 160, 64, []int{33, 65, 2}, -1},
		{kernels.I8, 64, 96, []int{70, 3, 129, 16}, 2},
		{kernels.F16, 32, 64, []int{100}, -1},
		{kernels.MXFP4, 32, 64, []int{9, 2}, -1},
		{kernels.BF16, 33, 17, []int{3, 40}, -1},
	}
	if slow {
		shapes = append(shapes, shape{kernels.MXFP4, 3072, 3584, []int{300, 64, 17}, -1})
	}
	parallel(t, len(shapes), 31, func(i int) string {
		sh := shapes[i]
		return fmt.Sprintf("%s/%dx%d/%v", sh.dt, sh.inter, sh.dim, sh.ns)
	}, func(t *testing.T, rng *rand.Rand, i int) {
		sh := shapes[i]
		k := len(sh.ns)
		es, xs := make([]kernels.Expert, k), make([][]float32, k)
		for j, n := range sh.ns {
			es[j] = randExpert(rng, sh.dt, sh.inter, sh.dim)
			xs[j] = RandVec(rng, n*sh.dim)
		}
		if sh.keyed >= 0 {
			e := &es[sh.keyed]
			e.W1.Key, e.W2.Key, e.W3.Key = kernels.NewKey(), kernels.NewKey(), kernels.NewKey()
		}
		on := bs
		if sh.inter == 3072 {
			on = k3Sized(bs)
		}
		each(t, on, func(t *testing.T, b kernels.Backend) {
			want, got := make([][]float32, k), make([][]float32, k)
			for j, e := range es {
				want[j] = make([]float32, sh.ns[j]*sh.dim)
				b.ExpertFFN(want[j], e, act, xs[j], sh.ns[j])
				got[j] = make([]float32, sh.ns[j]*sh.dim)
			}
			kernels.ExpertGroupFFN(b, got, es, act, xs, sh.ns)
			require.Equal(t, want, got)
		})
	})
}
