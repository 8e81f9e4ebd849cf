package experts

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	ckpt "github.com/deltafin/deltafin/checkpoint"
)

func TestHeatHalvesEveryHalfLifeTokens(t *testing.T) {
	t.Parallel()
	h := NewHeat(2, 3)
	h.SetHalfLife(4)
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

	cum := NewHeat(2, 3)
	cum.SetHalfLife(-1)
	cum.Touch(1, []int{0})
	cum.Tick(1 << 20)
	require.Equal(t, float32(1), cum.Score(a), "a negative half-life keeps cumulative counts")
}

// The store ticks the clock once per pass, at its first MoE layer, and
// once for a prefill's groups.
func TestStoreTicksHeatOncePerPass(t *testing.T) {
	t.Parallel()
	dir, spans := writeTinyModel(t, []int{2, 3}, 4)
	s, err := Open(t.Context(), Options{Dir: dir, Spans: spans, Readers: 2, HeatHalfLife: 2})
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

func TestHeatPersistsAcrossRuns(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "data", "expert_heat.jsonl")
	h, err := LoadHeat(path, 4, 8)
	require.NoError(t, err, "a missing file is an empty histogram")
	h.Touch(2, []int{1, 5})
	h.Touch(2, []int{5})
	h.Touch(9, []int{1}) // out of range: ignored
	require.NoError(t, h.Save(path))
	g, err := LoadHeat(path, 4, 8)
	require.NoError(t, err)
	require.Equal(t, float32(2), g.Score(ckpt.ExpertID{Layer: 2, Expert: 5}))
	require.Equal(t, float32(1), g.Score(ckpt.ExpertID{Layer: 2, Expert: 1}))
	require.Zero(t, g.Score(ckpt.ExpertID{Layer: 3, Expert: 5}))

	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "{\"layer\":2,\"expert\":1,\"heat\":1}\n{\"layer\":2,\"expert\":5,\"heat\":2}\n", string(b),
		"the format deltafin warm reads")
	for _, tc := range []struct {
		name    string
		content string
		want    string
	}{
		{"another model's shape", `{"layer":4,"expert":1,"heat":1}`, "outside the model's 4×8 experts"},
		{"negative heat", `{"layer":1,"expert":1,"heat":-1}`, "heat -1"},
		{"not JSON", "hello", "line 1"},
		{"second line damaged", "{\"layer\":1,\"expert\":1,\"heat\":1}\n{\"layer\":", "line 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "h")
			require.NoError(t, os.WriteFile(p, []byte(tc.content), 0o644))
			h, err := LoadHeat(p, 4, 8)
			require.ErrorIs(t, err, errHeatFormat)
			require.ErrorContains(t, err, tc.want)
			require.NotNil(t, h, "an empty histogram to start afresh with")
			require.Zero(t, h.Score(ckpt.ExpertID{Layer: 1, Expert: 1}))
		})
	}
}

func TestHeatHalvesInsteadOfOverflowing(t *testing.T) {
	t.Parallel()
	h := NewHeat(2, 2)
	for range heatHalving - 1 {
		h.Touch(1, []int{0})
	}
	h.Touch(1, []int{1})
	require.Equal(t, float32(heatHalving-1), h.Score(ckpt.ExpertID{Layer: 1, Expert: 0}))
	h.Touch(1, []int{0})
	require.Equal(t, float32(heatHalving/2), h.Score(ckpt.ExpertID{Layer: 1, Expert: 0}))
	require.Equal(t, float32(0.5), h.Score(ckpt.ExpertID{Layer: 1, Expert: 1}))
}
