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
