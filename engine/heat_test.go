package engine

import (
	"testing"

	"github.com/stretchr/testify/require"

	ckpt "github.com/deltafin/deltafin/checkpoint"
)

func TestHeatHalvesEveryHalfLifeTokens(t *testing.T) {
	t.Parallel()
	h := newHeat(2, 3)
	h.setHalfLife(4)
	a, b := ckpt.ExpertID{Layer: 1, Expert: 0}, ckpt.ExpertID{Layer: 1, Expert: 2}
	for range 3 {
		h.Touch(1, []int{0})
		h.Tick(1)
	}
	require.Equal(t, float32(3), h.Score(a), "no halving before 4 tokens")
	h.Touch(1, []int{2})
	h.Tick(1)
	require.Equal(t, float32(1.5), h.Score(a))
	require.Equal(t, float32(0.5), h.Score(b))
	h.Tick(9) // two more periods, one token into the next
	require.Equal(t, float32(0.375), h.Score(a))
	h.Tick(3)
	require.Equal(t, float32(0.1875), h.Score(a))

	cum := newHeat(2, 3)
	cum.setHalfLife(-1)
	cum.Touch(1, []int{0})
	cum.Tick(1 << 20)
	require.Equal(t, float32(1), cum.Score(a), "a negative half-life keeps cumulative counts")
}

// The store ticks the clock once per pass, at its first MoE layer, and
// once for a prefill's groups.
func TestStoreTicksHeatOncePerPass(t *testing.T) {
	t.Parallel()
	dir, spans := writeTinyModel(t, []int{2, 3}, 4)
	s, err := openSpanStore(t.Context(), spanStoreOptions{Dir: dir, Spans: spans, Readers: 2, HeatHalfLife: 2})
	require.NoError(t, err)
	defer s.Close()
	acquire := func(layer int, ids, union []int) {
		b, err := s.AcquirePart(t.Context(), layer, ids, union)
		require.NoError(t, err)
		b.Release()
	}
	acquire(2, []int{0}, []int{0})
	acquire(3, []int{0}, []int{0})
	id := ckpt.ExpertID{Layer: 2, Expert: 0}
	require.Equal(t, float32(1), s.heat.Score(id))
	acquire(2, []int{0, 1}, []int{0, 1, 2, 3})
	acquire(2, []int{2, 3}, []int{0, 1, 2, 3}) // the same prefill pass
	require.Equal(t, float32(1), s.heat.Score(id), "halved at the second pass: (1+1)/2")
	require.Equal(t, float32(0.5), s.heat.Score(ckpt.ExpertID{Layer: 3, Expert: 0}))
}
