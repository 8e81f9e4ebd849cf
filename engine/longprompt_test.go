package engine

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLongPromptPrefillEqualsDecode: a 650-token prompt prefilled at once
// (MLA in three 256-row blocks of 64-key tiles, Kimi-Linear's KDA in ten
// chunks and a partial one) gives at every position the logits of the same
// tokens decoded one at a time through the caches, within the 2e-3 the
// reference tests hold the logits to (the worst seen here is about 1e-4,
// after 650 recurrent KDA steps). The router is a discontinuity: where two
// experts' scores nearly tie, that drift can flip one; this prompt has no
// such position (the same pattern at 700 tokens has one, at position 699 of
// Kimi-Linear tiny's layer 5, with the old attention as with the tiles).
func TestLongPromptPrefillEqualsDecode(t *testing.T) {
	t.Parallel()
	const n = 650
	for _, dir := range []string{filepath.Join("..", "testdata", "k3-tiny"), filepath.Join("..", "testdata", "kimi-linear-tiny", "hf")} {
		t.Run(filepath.Base(filepath.Dir(dir))+"/"+filepath.Base(dir), func(t *testing.T) {
			t.Parallel()
			m, err := Open(t.Context(), dir, Options{})
			require.NoError(t, err)
			t.Cleanup(func() { _ = m.Close() })
			ids := make([]int, n)
			for i := range ids {
				ids[i] = (i*31 + 7) % 500 // inside both vocabularies
			}
			prefill, err := m.NewSession().Forward(t.Context(), ids, true)
			require.NoError(t, err)
			require.Len(t, prefill, n)
			s := m.NewSession()
			worst, at := 0.0, 0
			for i, id := range ids {
				row, err := s.Forward(t.Context(), []int{id}, false)
				require.NoError(t, err)
				d, _ := maxAbsDiff(prefill[i], row[0])
				if d > worst {
					worst, at = d, i
				}
			}
			t.Logf("prefill of %d tokens vs one at a time: max |Δlogit| = %.3g (position %d)", n, worst, at)
			require.LessOrEqual(t, worst, 2e-3)
		})
	}
}
