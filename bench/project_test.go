package bench

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

var rates = ComputeRates{Source: "test", MatVecBF16: 100, MatVecInt8: 200, ExpertFFN: 50}

// The full K3's plan on a 64 GB machine reads 91.7 GB per token (25.8 GB
// of experts), the figure issue 23 gives for the full-size layout, and the
// disk term is those bytes over the drives.
func TestProjectK3On64GB(t *testing.T) {
	t.Parallel()
	p, err := ProjectK3(ProjectOptions{RAM: 64e9, DriveGBps: []float64{6.6}, Compute: rates})
	require.NoError(t, err)
	require.InDelta(t, 91.7e9, float64(p.Plan.DiskBytesPerToken), 0.05e9)
	require.InDelta(t, 25.8e9, float64(p.Plan.ExpertBytesPerToken), 0.05e9)
	require.InDelta(t, float64(p.Plan.DiskBytesPerToken)/6.6e9, p.DiskSeconds, 1e-9)
	require.InDelta(t, float64(p.SpineComputeBytes)/100e9, p.SpineSeconds, 1e-9)
	require.InDelta(t, 92*16*17547264/50e9, p.ExpertSeconds, 1e-9)
	require.Equal(t, max(p.DiskSeconds, p.ComputeSeconds()), p.Overlapped)
	require.InDelta(t, p.DiskSeconds+p.ComputeSeconds(), p.Serial, 1e-12)
	// The spine computed is the BF16 spine without the embedding (about
	// 113.5 GB with it, DELTAFIN-PERFORMANCE.md).
	require.InDelta(t, 111.2e9, float64(p.SpineComputeBytes), 0.2e9)

	// A second drive halves the expert part only down to the spine's
	// floor: the streamed spine comes from the mirror's drive alone.
	two, err := ProjectK3(ProjectOptions{RAM: 64e9, DriveGBps: []float64{6.6, 6.6}, Compute: rates})
	require.NoError(t, err)
	require.InDelta(t, max(float64(two.Plan.DiskBytesPerToken)/13.2e9, float64(two.Plan.StreamedSpineBytes)/6.6e9), two.DiskSeconds, 1e-9)
	require.Less(t, two.DiskSeconds, p.DiskSeconds)

	// The int8 spine: about half the bytes (53–60 GB in the perf doc's
	// count), so more of it fits and less streams.
	i8, err := ProjectK3(ProjectOptions{RAM: 64e9, Int8: true, DriveGBps: []float64{6.6}, Compute: rates})
	require.NoError(t, err)
	require.InDelta(t, 56e9, float64(i8.SpineComputeBytes), 4e9)
	require.Less(t, i8.Plan.DiskBytesPerToken, p.Plan.DiskBytesPerToken)
	require.InDelta(t, float64(i8.SpineComputeBytes)/200e9, i8.SpineSeconds, 1e-9)
}

func TestLoadComputeRates(t *testing.T) {
	t.Parallel()
	c, err := LoadComputeRates(filepath.Join("..", "testdata", "compute", "m1max-metal-fork.json"))
	require.NoError(t, err)
	require.Equal(t, 283.0, c.MatVecBF16)
	require.Contains(t, c.Source, "DELTAFIN-PERFORMANCE.md")

	dir := t.TempDir()
	kern := filepath.Join(dir, "kernels.json")
	require.NoError(t, os.WriteFile(kern, []byte(`{"backend":"neon","kernels":[
		{"name":"matvec_BF16_12288x7168","gbps":40},{"name":"matvec_BF16_12288x7168_resident","gbps":90},
		{"name":"matvec_I8_12288x7168","gbps":60},{"name":"experts_ffn_mxfp4_16x3072x3584","gbps":30}]}`), 0o644))
	c, err = LoadComputeRates(kern)
	require.NoError(t, err)
	require.Equal(t, ComputeRates{Source: kern + " (bench kernels, backend neon)", MatVecBF16: 40, MatVecInt8: 60, ExpertFFN: 30}, c)

	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"matvec_bf16_gb_per_s": 5}`), 0o644))
	_, err = LoadComputeRates(bad)
	require.ErrorContains(t, err, "expert_ffn_gb_per_s")
}

// TestProjectDraftArithmetic checks drafting's projection by hand on a
// constructed plan: 20 GB of streamed spine and 10 GB of experts per
// token over one 10 GB/s drive, 0.5 s of compute per position.
func TestProjectDraftArithmetic(t *testing.T) {
	t.Parallel()
	p := Projection{DriveGBps: []float64{10}, SpineSeconds: 0.4, ExpertSeconds: 0.1}
	p.Plan.StreamedSpineBytes, p.Plan.ExpertBytesPerToken, p.Plan.DiskBytesPerToken = 20e9, 10e9, 30e9
	p.DiskSeconds, p.Overlapped = 3, 3
	// T = 3 at a = 0.5, g = 0.5: 20 + 10·2 = 40 GB, 4 s of disk; 1.5 s of
	// compute; 1.75 tokens: 4/1.75 s/token overlapped, 5.5/1.75 serial.
	q, err := ProjectDraft(p, DraftOptions{Accept: 0.5, T: 3, Growth: 0.5})
	require.NoError(t, err)
	require.InDelta(t, 40e9, q.DiskBytes, 1)
	require.InDelta(t, 4.0, q.DiskSeconds, 1e-12)
	require.InDelta(t, 1.5, q.Compute, 1e-12)
	require.InDelta(t, 1.75, q.TokensPerPass, 1e-12)
	require.InDelta(t, 4/1.75, q.Overlapped, 1e-12)
	require.InDelta(t, 5.5/1.75, q.Serial, 1e-12)
	require.InDelta(t, 3/(4/1.75), q.Speedup, 1e-12)
	// T = 1 is the plain projection's disk term.
	one, err := ProjectDraft(p, DraftOptions{Accept: 0.5, T: 1, Growth: 0.5})
	require.NoError(t, err)
	require.InDelta(t, p.DiskSeconds, one.Overlapped, 1e-12)
	// The best T at a = 0.9: deeper than 3, and better than any other.
	best, err := ProjectDraft(p, DraftOptions{Accept: 0.9, Growth: 0.5})
	require.NoError(t, err)
	require.Greater(t, best.T, 3)
	for T := 1; T <= DraftMaxT; T++ {
		q, err := ProjectDraft(p, DraftOptions{Accept: 0.9, T: T, Growth: 0.5})
		require.NoError(t, err)
		require.GreaterOrEqual(t, q.Overlapped, best.Overlapped)
	}
	// Compute-bound: everything resident, T costs T times the compute.
	res := Projection{DriveGBps: []float64{10}, SpineSeconds: 0.4, ExpertSeconds: 0.1, Overlapped: 0.5}
	q, err = ProjectDraft(res, DraftOptions{Accept: 0.9})
	require.NoError(t, err)
	require.Equal(t, 1, q.T, "nothing to share: drafting does not pay")
	_, err = ProjectDraft(p, DraftOptions{Accept: 1.5})
	require.Error(t, err)

	// The full K3 on the 64 GB M1 Max: the streamed spine dominates, so
	// drafting at a = 0.6 shares it and pays (1.41× with these rates).
	k3, err := ProjectK3(ProjectOptions{RAM: 64e9, DriveGBps: []float64{6.6}, Compute: rates})
	require.NoError(t, err)
	m1, err := ProjectDraft(k3, DraftOptions{Accept: 0.6})
	require.NoError(t, err)
	require.InDelta(t, 1.41, m1.Speedup, 0.01)
}
