package engine

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/deltafin/deltafin/experts"
	"github.com/deltafin/deltafin/kernels"
	"github.com/stretchr/testify/require"
)

func TestF32ToF16RoundsHalfToEven(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		x    float32
		want uint16
	}{
		{"one", 1, 0x3c00},
		{"largest", 65504, 0x7bff},
		{"tie above the largest rounds to infinity", 65520, 0x7c00},
		{"tie to even (down)", 1 + 1.0/2048, 0x3c00},
		{"tie to even (up)", 1 + 3.0/2048, 0x3c02},
		{"above the tie", 1 + 1.0/2048 + 1.0/65536, 0x3c01},
		{"smallest subnormal", float32(math.Ldexp(1, -24)), 0x0001},
		{"half the smallest subnormal ties to zero", float32(math.Ldexp(1, -25)), 0x0000},
		{"1.5 subnormal units tie to 2", float32(3 * math.Ldexp(1, -25)), 0x0002},
		{"subnormal carries into the normals", float32(math.Ldexp(1, -14) - math.Ldexp(1, -26)), 0x0400},
		{"negative", -2, 0xc000},
		{"zero", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, f32ToF16(tc.x))
		})
	}
	t.Run("every finite half round-trips", func(t *testing.T) {
		for h := 0; h < 1<<16; h++ {
			if h&0x7c00 == 0x7c00 {
				continue
			}
			require.Equal(t, uint16(h), f32ToF16(kernels.F16ToF32(uint16(h))), "half %#04x", h)
		}
	})
}

// TestSpineInt8 converts both fixtures, checks the conversion resumes to the
// same bytes, and measures the int8 spine against BF16 on the reference
// prompts: the largest logit deviation and the top-1 agreement, within the
// bounds stated here (the int8 spine is labelled non-exact).
func TestSpineInt8(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, dir, ref string
		maxDev         float64 // largest |Δlogit| allowed
		minTop1        float64 // least share of positions with the same argmax
	}{
		// The fixtures have random weights: no trained margins, so a 0.4%
		// weight error moves their logits far more than a trained model's
		// (k3-tiny measured 6.2 and 31%, kimi-linear-tiny 4.1 and 72%).
		{"k3-tiny", filepath.Join("..", "testdata", "k3-tiny"), filepath.Join("..", "testdata", "k3-tiny", "reference.safetensors"), 9, 0.2},
		{"kimi-linear-tiny", filepath.Join("..", "testdata", "kimi-linear-tiny", "hf"), filepath.Join("..", "testdata", "kimi-linear-tiny", "reference.safetensors"), 6, 0.6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "model.spine-int8")
			_, err := Open(t.Context(), tc.dir, Options{SpineInt8: out})
			require.ErrorIs(t, err, ErrSpineInt8, "no conversion yet")
			require.NoError(t, ConvertSpineInt8(t.Context(), tc.dir, out, nil))
			files, err := filepath.Glob(filepath.Join(out, "*.safetensors"))
			require.NoError(t, err)
			require.NotEmpty(t, files)
			first, err := os.ReadFile(files[0])
			require.NoError(t, err)

			// An interrupted run: one file and the manifest missing, a
			// stray temporary file left. The rerun ends with the same bytes.
			require.NoError(t, os.Remove(files[0]))
			require.NoError(t, os.Remove(filepath.Join(out, spineInt8Manifest)))
			require.NoError(t, os.WriteFile(filepath.Join(out, "."+filepath.Base(files[0])+".partial.123"), []byte("torn"), 0o644))
			_, err = Open(t.Context(), tc.dir, Options{SpineInt8: out})
			require.ErrorIs(t, err, ErrSpineInt8, "unfinished conversion")
			require.NoError(t, ConvertSpineInt8(t.Context(), tc.dir, out, nil))
			again, err := os.ReadFile(files[0])
			require.NoError(t, err)
			require.Equal(t, first, again)

			bf, err := Open(t.Context(), tc.dir, Options{NoSpec: true})
			require.NoError(t, err)
			defer bf.Close()
			i8, err := Open(t.Context(), tc.dir, Options{NoSpec: true, SpineInt8: out})
			require.NoError(t, err)
			defer i8.Close()
			require.Equal(t, kernels.I8, i8.w.lmHead.DType)
			require.Equal(t, bf.w.embed.DType, i8.w.embed.DType, "the embedding stays as stored")

			// Each weight is within half a step of its int8 value: the
			// conversion's own guarantee, on lm_head.
			a, b := bf.w.lmHead, i8.w.lmHead
			ra, rb := make([]float32, a.Cols), make([]float32, a.Cols)
			for r := range a.Rows {
				kernels.DecodeRow(ra, a, r)
				kernels.DecodeRow(rb, b, r)
				scale := float64(math.Float32frombits(uint32(b.Scales[4*r]) | uint32(b.Scales[4*r+1])<<8 | uint32(b.Scales[4*r+2])<<16 | uint32(b.Scales[4*r+3])<<24))
				for c := range ra {
					// half a step, plus the clamp when the f16 scale rounded down
					require.LessOrEqual(t, math.Abs(float64(ra[c]-rb[c])), 0.5*scale*(1+1.0/512)+1e-9, "row %d col %d", r, c)
				}
			}

			ref := loadRef(t, tc.ref)
			worst, same, n := 0.0, 0, 0
			for _, tag := range []string{"short", "long"} {
				prompt := ref.ints(t, tag+".input_ids")
				a, err := bf.NewSession().Forward(t.Context(), prompt, true)
				require.NoError(t, err)
				b, err := i8.NewSession().Forward(t.Context(), prompt, true)
				require.NoError(t, err)
				for p := range a {
					d, _ := maxAbsDiff(a[p], b[p])
					worst = max(worst, d)
					if argmax(a[p]) == argmax(b[p]) {
						same++
					}
					n++
				}
			}
			top1 := float64(same) / float64(n)
			t.Logf("%s int8 spine vs BF16 over %d positions: max |Δlogit| %.4g, top-1 agreement %.1f%%", tc.name, n, worst, 100*top1)
			require.Positive(t, worst, "the int8 spine is not the BF16 one")
			require.LessOrEqual(t, worst, tc.maxDev)
			require.GreaterOrEqual(t, top1, tc.minTop1)
		})
	}
}

// TestInt8SpineHalvesThePlannedSpine: the budget plans the int8 spine's
// bytes, about half of BF16's (lm_head and the layer matrices).
func TestInt8SpineHalvesThePlannedSpine(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "testdata", "k3-tiny")
	out := filepath.Join(t.TempDir(), "i8")
	require.NoError(t, ConvertSpineInt8(t.Context(), dir, out, nil))
	plan := func(i8 string) experts.BudgetPlan {
		m, err := Open(t.Context(), dir, Options{SpineInt8: i8, Stream: &StreamOptions{TotalRAM: 64 << 30, OverrideRAM: 2 << 20}})
		require.NoError(t, err)
		defer m.Close()
		return m.Plan()
	}
	bf, i8 := plan(""), plan(out)
	t.Logf("BF16 plan: %s\nint8 plan: %s", bf, i8)
	require.Less(t, i8.StreamedSpineBytes+i8.PinnedBytes, (bf.StreamedSpineBytes+bf.PinnedBytes)*3/4)
}
