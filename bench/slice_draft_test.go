package bench

import (
	"path/filepath"
	"testing"

	"github.com/deltafin/deltafin/experts"
	"github.com/deltafin/deltafin/kernels"
	"github.com/stretchr/testify/require"
)

// TestEngineDraftsOnK3Tiny runs bench slice --draft's decodes on k3-tiny
// streamed with nothing in RAM: T = 1, then the oracle at R = 0.5 and 1
// over the same tokens (checked inside), with fewer target passes and
// fewer bytes per token as R grows.
func TestEngineDraftsOnK3Tiny(t *testing.T) {
	t.Parallel()
	o := SliceBenchOptions{Dir: filepath.Join("..", "testdata", "k3-tiny"), Backend: kernels.Ref(), Tokens: 16, Drafts: []float64{0.5, 1}, Seed: 3}
	res, err := o.engineDrafts(t.Context(), experts.BudgetPlan{PinnedLayers: 0, CacheExperts: 0}, filepath.Join(t.TempDir(), "heat.bin"))
	require.NoError(t, err)
	require.Len(t, res, 3)
	require.Equal(t, "T=1", res[0].Draft)
	require.Zero(t, res[0].Drafted)
	require.Equal(t, 16, res[0].TargetPasses)
	require.Equal(t, "oracle:1", res[2].Draft)
	require.Less(t, res[2].TargetPasses, res[1].TargetPasses+1)
	require.Less(t, res[1].TargetPasses, 16)
	require.Less(t, res[2].BytesVsT1, 1.0)
	require.Greater(t, res[2].MeanT, 1.0)
	for _, r := range res {
		require.Positive(t, r.SecondsPerToken, r.Draft)
		require.Positive(t, r.DiskBytesPerToken, r.Draft)
		t.Logf("%s: %.4f s/token (%.2f×), %.0f B/token (%.2f), %d passes, %d/%d accepted, T %.2f",
			r.Draft, r.SecondsPerToken, r.SpeedupVsT1, r.DiskBytesPerToken, r.BytesVsT1, r.TargetPasses, r.Accepted, r.Drafted, r.MeanT)
	}
}
