package experts

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/internal/directio"
)

func TestSystemReserve(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		ram  int64
		want int64
	}{
		{"24 GB machine keeps 10 GiB", 24e9, 10 * gib},
		{"64 GiB Mac keeps 11.52 GiB", 64 * gib, 64 * gib * 18 / 100},
		{"128 GiB Mac keeps 18%", 128 * gib, 128 * gib * 18 / 100},
	} {
		t.Run(tc.name, func(t *testing.T) { require.Equal(t, tc.want, systemReserve(tc.ram)) })
	}
}

func TestPlanBudget(t *testing.T) {
	t.Parallel()
	layers := []int64{3 * gib / 2, 1 * gib, 1 * gib, 1 * gib} // ring: 3 GiB for all, 2 GiB after layer 0
	base := BudgetInput{
		GlobalBytes: 1 * gib, LayerBytes: layers, WorkingBytes: gib / 2,
		SpanBytes: ckpt.ExpertSpanBytes, MoELayers: 3, ExpertsPerLayer: 896, TopK: 16,
	}
	slot := directio.AlignUp(ckpt.ExpertSpanBytes) + directio.Align
	for _, tc := range []struct {
		name       string
		total      int64
		avail      int64
		override   int64
		wantPinned int
		wantGlobal bool
		wantErr    string
	}{
		{"everything pinned: no ring", 64 * gib, 0, 10 * gib, 4, true, ""},
		{"override pins a prefix", 64 * gib, 0, 11 * gib / 2, 1, true, ""},
		{"the whole spine fits where a shorter prefix and its ring do not", 64 * gib, 0, 6 * gib, 4, true, ""},
		{"room for the head and the ring only: zero layers", 64 * gib, 0, 9 * gib / 2, 0, true, ""},
		{"MemAvailable limits the plan", 64 * gib, 13 * gib / 2, 0, 1, true, ""},
		{"room for the ring only: nothing pinned", 64 * gib, 0, 18 * gib / 5, 0, false, ""},
		{"too small for the ring", 64 * gib, 0, 2 * gib, 0, false, "two layer buffers"},
		{"too small for the working set", 64 * gib, 0, gib / 4, 0, false, "RAM budget too small"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := base
			in.TotalRAM, in.AvailableRAM, in.OverrideRAM = tc.total, tc.avail, tc.override
			p, err := PlanBudget(in)
			if tc.wantErr != "" {
				require.ErrorIs(t, err, ErrBudget)
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.wantPinned, p.PinnedLayers)
			require.Equal(t, tc.wantGlobal, p.GlobalsPinned)
			require.LessOrEqual(t, p.PinnedBytes+p.RingBytes+p.CacheBytes, p.Usable)
			require.Less(t, p.Usable-p.PinnedBytes-p.RingBytes-p.CacheBytes, slot, "the cache takes what remains")
			if p.PinnedLayers < len(layers) {
				require.Equal(t, 2*slices.Max(layers[p.PinnedLayers:]), p.RingBytes)
			} else {
				require.Zero(t, p.RingBytes)
			}
			var spine int64 = base.GlobalBytes
			for _, b := range layers {
				spine += b
			}
			require.Equal(t, spine-p.PinnedBytes, p.StreamedSpineBytes)
			require.Equal(t, p.StreamedSpineBytes+p.ExpertBytesPerToken, p.DiskBytesPerToken)
			require.Contains(t, p.String(), "expected from disk per token")
		})
	}
}

// TestPlanBudgetLeavesHeadroom: the plan against the RAM available now keeps
// weights, the working set and a headroom for the page cache inside it (a
// 10.3 GB machine was planned to the last byte and OOM-killed), and --ram-gb
// is the RAM Deltafin takes in all, so the memory really left can be given.
func TestPlanBudgetLeavesHeadroom(t *testing.T) {
	t.Parallel()
	layers := make([]int64, 60)
	for i := range layers {
		layers[i] = 300e6
	}
	base := BudgetInput{
		GlobalBytes: 2e9, LayerBytes: layers, WorkingBytes: 64 * (directio.AlignUp(ckpt.ExpertSpanBytes) + directio.Align),
		SpanBytes: ckpt.ExpertSpanBytes, MoELayers: 60, ExpertsPerLayer: 896, TopK: 16,
	}
	for _, tc := range []struct {
		name            string
		total, avail    int64
		override        int64
		limit           int64 // what weights, working set and headroom must fit in
		minKeptFree     int64
		wantWholeBudget bool // the plan spends the limit to within one expert
	}{
		{"10.3 GB available of 32 GB: headroom left", 32e9, 10.3e9, 0, 10.3e9, gib, false},
		{"plenty available: the system's share of physical RAM", 32e9, 30e9, 0, 32e9, 10 * gib, false},
		{"availability unknown: the system's share", 24e9, 0, 0, 24e9, 10 * gib, false},
		{"--ram-gb 10.3: that much for Deltafin", 32e9, 10.3e9, 10.3e9, 10.3e9, 0, true},
		{"--ram-gb 4 on a big machine", 128e9, 100e9, 4e9, 4e9, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := base
			in.TotalRAM, in.AvailableRAM, in.OverrideRAM = tc.total, tc.avail, tc.override
			p, err := PlanBudget(in)
			require.NoError(t, err)
			resident := p.PinnedBytes + p.RingBytes + p.CacheBytes + p.Working
			require.LessOrEqual(t, resident+p.Reserve, tc.limit, "weights + working set + headroom fit: %s", p)
			require.GreaterOrEqual(t, p.Reserve, tc.minKeptFree)
			require.Equal(t, base.WorkingBytes, p.Working)
			if tc.wantWholeBudget {
				require.Zero(t, p.Reserve, "--ram-gb subtracts no reserve")
				require.Greater(t, resident, tc.limit-p.SlotBytes, "the cache takes what --ram-gb leaves")
			}
			if tc.avail > 0 && tc.override == 0 {
				require.GreaterOrEqual(t, tc.avail-resident, Headroom(tc.avail), "free memory stays above the headroom")
			}
		})
	}
}

// TestSpineWarningSaysWhatStreamingCosts: a --ram-gb just under the spine
// streams layers every token; the plan says so, with the bytes per token and
// the --ram-gb that would pin the whole spine, and that figure does.
func TestSpineWarningSaysWhatStreamingCosts(t *testing.T) {
	t.Parallel()
	layers := make([]int64, 10)
	for i := range layers {
		layers[i] = 1.7e9
	}
	in := BudgetInput{TotalRAM: 64e9, GlobalBytes: 2e9, LayerBytes: layers, WorkingBytes: 0.6e9}
	in.OverrideRAM = 19.8e9
	p, err := PlanBudget(in)
	require.NoError(t, err)
	require.Equal(t, len(layers), p.PinnedLayers)
	require.Empty(t, p.SpineWarning())
	require.NotContains(t, p.String(), "does not fit")

	in.OverrideRAM = 19.5e9
	p, err = PlanBudget(in)
	require.NoError(t, err)
	require.Equal(t, 7, p.PinnedLayers, "two layer buffers of 1.7 GB leave room for 7 layers")
	require.Equal(t, int64(3*1.7e9), p.StreamedSpineBytes)
	w := p.SpineWarning()
	require.Equal(t, "the spine does not fit: the layers from 7 on are read from disk every token, 5.10 GB per token on top of the experts; 100.0 MB more RAM (--ram-gb 19.6) would pin it", w)
	require.Contains(t, p.String(), w, "the plan printed at startup carries it")

	in.OverrideRAM = 19.6e9
	p, err = PlanBudget(in)
	require.NoError(t, err)
	require.Empty(t, p.SpineWarning(), "the suggested --ram-gb pins the spine")
}

// TestPlanBudgetDrafter: a drafter's resident weights come out of what the
// plan may pin and cache, and a budget they do not fit in says so.
func TestPlanBudgetDrafter(t *testing.T) {
	t.Parallel()
	layers := []int64{gib, gib, gib}
	in := BudgetInput{OverrideRAM: 8 * gib, GlobalBytes: gib, LayerBytes: layers, WorkingBytes: gib / 2,
		SpanBytes: 16 << 20, MoELayers: 3, ExpertsPerLayer: 896, TopK: 16}
	without, err := PlanBudget(in)
	require.NoError(t, err)
	require.NotContains(t, without.String(), "drafter")
	in.DraftBytes = 3 * gib / 2
	with, err := PlanBudget(in)
	require.NoError(t, err)
	require.Equal(t, without.Usable-in.DraftBytes, with.Usable)
	require.Equal(t, in.DraftBytes, with.Draft)
	require.Less(t, with.PinnedBytes+with.CacheBytes, without.PinnedBytes+without.CacheBytes)
	require.Contains(t, with.String(), "drafter: 1.61 GB resident")
	in.DraftBytes = 8 * gib
	_, err = PlanBudget(in)
	require.ErrorIs(t, err, ErrBudget)
	require.ErrorContains(t, err, "and the drafter 8.59 GB")
}
