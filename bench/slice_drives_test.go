package bench

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/drives"
	"github.com/deltafin/deltafin/internal/testref"
)

// TestBenchDrivesSpreadsReadsOverEveryDrive runs the multi-drive
// measurement on a copy of k3-tiny: every byte comes from the simulated
// drives, each one reads, none fails. (The ratio to the limits is a speed,
// measured by bench slice --drive-gbps, not asserted here.)
func TestBenchDrivesSpreadsReadsOverEveryDrive(t *testing.T) {
	t.Parallel()
	dir := testref.CopyModel(t, "k3-tiny", t.TempDir())
	m, err := drives.OpenMirror(t.Context(), dir, nil)
	require.NoError(t, err)
	var layers []int
	for id := range m.Spans {
		if !slices.Contains(layers, id.Layer) {
			layers = append(layers, id.Layer)
		}
	}
	slices.Sort(layers)
	r, err := BenchDrives(t.Context(), DriveBenchOptions{Dir: dir, Layers: layers, GBps: []float64{0.04, 0.02, 0.02}, Experts: 16, Tokens: 3, Seed: 1, Burst: 32 << 10})
	require.NoError(t, err)
	require.Zero(t, r.MirrorBytes)
	require.Len(t, r.Drives, 3)
	for _, d := range r.Drives {
		require.Positive(t, d.Bytes, d.Name)
		require.False(t, d.Failed)
		require.Zero(t, d.Corrupt)
		require.InDelta(t, 1, (d.BusyTime+d.IdleTime)/(r.SecondsPerTok*3), 0.2, "busy and idle cover the measured time")
	}
	require.InDelta(t, 0.08, r.LimitGBps, 1e-12)
}
