package bench

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/engine"
)

// Two short prompts through k3-tiny: a figure per length in the order
// asked, each consistent with itself and with the run's FMA peak.
func TestPrefillReportsEachLengthAgainstTheFMAPeak(t *testing.T) {
	t.Parallel()
	m, err := engine.Open(t.Context(), filepath.Join("..", "testdata", "k3-tiny"), engine.Options{})
	require.NoError(t, err)
	defer m.Close()
	rep, err := Prefill(t.Context(), m, PrefillOptions{Tokens: []int{32, 16}, PeakTime: time.Millisecond, Threads: 2})
	require.NoError(t, err)
	info := m.Info()
	require.Equal(t, info.ID, rep.Model)
	require.Equal(t, info.Backend, rep.Backend)
	require.Positive(t, rep.FMAPeakGFLOPS)
	require.Len(t, rep.Lengths, 2)
	for i, n := range []int{32, 16} {
		l := rep.Lengths[i]
		require.Equal(t, n, l.Tokens)
		require.Positive(t, l.Seconds)
		require.InEpsilon(t, float64(n)/l.Seconds, l.TokensPerS, 1e-9)
		require.Equal(t, PrefillFLOPs(info, n), l.FLOPs)
		require.InEpsilon(t, l.FLOPs/l.Seconds/1e9, l.GFLOPS, 1e-9)
		require.InDelta(t, l.GFLOPS/rep.FMAPeakGFLOPS, l.FLOPRatio, 1e-12)
	}
	// T·token + head + T(T+1)/2·pair, each part positive on k3-tiny.
	require.Equal(t, float64(16*info.TokenFLOPs+info.HeadFLOPs+136*info.PairFLOPs), PrefillFLOPs(info, 16))
}

func TestPrefillRefusesBadLengths(t *testing.T) {
	t.Parallel()
	m, err := engine.Open(t.Context(), filepath.Join("..", "testdata", "k3-tiny"), engine.Options{})
	require.NoError(t, err)
	defer m.Close()
	for _, tokens := range [][]int{nil, {0}, {16, -1}, {m.Info().ContextLen + 1}} {
		_, err := Prefill(t.Context(), m, PrefillOptions{Tokens: tokens, PeakTime: time.Millisecond})
		require.ErrorIs(t, err, ErrPrefillLength, "%v", tokens)
	}
}

func TestPrefillIDsAreDeterministicAndInTheVocabulary(t *testing.T) {
	t.Parallel()
	ids := PrefillIDs(5000, 1024)
	require.Equal(t, ids, PrefillIDs(5000, 1024))
	seen := map[int]bool{}
	for _, id := range ids {
		require.GreaterOrEqual(t, id, 0)
		require.Less(t, id, 1024)
		seen[id] = true
	}
	require.Len(t, seen, 1024, "the stride covers the whole vocabulary")
}
