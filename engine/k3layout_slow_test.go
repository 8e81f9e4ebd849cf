//go:build slow

package engine

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/experts"
)

// TestK3LayoutOpens opens the full-size K3 layout's index (k3layout_test.go:
// 497,220 tensors in 96 sparse shards), plans it on a 128 GB machine and
// opens an expert store over its spans;
// then a shard cut inside an expert is refused at open, by name.
func TestK3LayoutOpens(t *testing.T) {
	dir := k3LayoutDir(t)
	c, ck, err := openIndex(t.Context(), dir, ckpt.OpenFile)
	require.NoError(t, err)
	require.Len(t, ck.tensors, k3Tensors-168, "the text model's tensors: the vision tower's are skipped")
	require.Len(t, ck.experts, 92*896)
	require.Equal(t, ckpt.ExpertSpan{Shard: "model-00002-of-000096.safetensors", Offset: ck.experts[ckpt.ExpertID{Layer: 1, Expert: 0}].Offset, Size: ckpt.ExpertSpanBytes},
		ck.experts[ckpt.ExpertID{Layer: 1, Expert: 0}])
	layers, globals := ck.spineBytes(c)
	var spine int64
	for _, b := range layers {
		spine += b
	}
	// K3-ARCHITECTURE.md §3.4: about 56.7B spine parameters in BF16.
	require.InDelta(t, 113e9, float64(spine+globals), 2e9)
	m := &Model{cfg: c, ck: ck}
	plan, err := m.planStreaming(&StreamOptions{TotalRAM: 128e9, AvailableRAM: 120e9})
	require.NoError(t, err)
	require.Positive(t, plan.PinnedLayers)
	require.Less(t, plan.PinnedLayers, 93)
	// The expert store checks all 82,432 spans against their shards.
	store, err := experts.Open(t.Context(), experts.Options{Dir: dir, Spans: ck.experts, Sources: ck.sources()})
	require.NoError(t, err)
	require.NoError(t, store.Close())
	require.NoError(t, ck.close())

	// Cut shard 50 (layer 49) in the middle of its experts.
	shard := filepath.Join(dir, "model-00050-of-000096.safetensors")
	st, err := os.Stat(shard)
	require.NoError(t, err)
	require.NoError(t, os.Truncate(shard, st.Size()/2))
	_, _, err = openIndex(t.Context(), dir, ckpt.OpenFile)
	require.ErrorIs(t, err, ckpt.ErrTruncated)
	require.ErrorContains(t, err, "model-00050-of-000096.safetensors")
	require.ErrorContains(t, err, "layer 49 expert")
}
