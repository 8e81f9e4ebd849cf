package bench

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/checkpoint/safetensors"
)

// Tiny experts: inter 64, latent 96 → 9,792-byte spans.
const (
	tinyInter  = 64
	tinyLatent = 96
)

// tinyExperts lists n experts of one layer, six MXFP4 tensors each, in
// descending id order.
func tinyExperts(layer, n int) []synthTensor {
	I, D := int64(tinyInter), int64(tinyLatent)
	shapes := [6][2]int64{{I, D / 2}, {I, D / 32}, {D, I / 2}, {D, I / 32}, {I, D / 2}, {I, D / 32}}
	var t []synthTensor
	for e := n - 1; e >= 0; e-- {
		for part, s := range shapes {
			t = append(t, synthTensor{ckpt.ExpertName(ckpt.ExpertID{Layer: layer, Expert: e}, part), "U8", s[:], fillKind(part % 2)})
		}
	}
	return t
}

func TestSyntheticShardResumesToTheSameBytes(t *testing.T) {
	t.Parallel()
	ts := append([]synthTensor{{"language_model.model.norm.weight", "BF16", []int64{12 << 20}, fillBF16}}, tinyExperts(1, 900)...)
	dir := t.TempDir()
	fresh := filepath.Join(dir, "fresh.safetensors")
	require.NoError(t, writeSyntheticShard(t.Context(), fresh, ts, 42, func(int64) {}))

	// Interrupt a second write after two chunks, then resume it.
	resumed := filepath.Join(dir, "resumed.safetensors")
	ctx, cancel := context.WithCancel(t.Context())
	var written int64
	err := writeSyntheticShard(ctx, resumed, ts, 42, func(n int64) {
		if written += n; written >= 2*shardChunk {
			cancel()
		}
	})
	require.ErrorIs(t, err, context.Canceled)
	_, err = os.Stat(resumed)
	require.True(t, os.IsNotExist(err), "an interrupted shard is never at its final name")
	var again int64
	require.NoError(t, writeSyntheticShard(t.Context(), resumed, ts, 42, func(n int64) { again += n }))
	a, err := os.ReadFile(fresh)
	require.NoError(t, err)
	b, err := os.ReadFile(resumed)
	require.NoError(t, err)
	require.Equal(t, a, b)
	require.Equal(t, int64(len(a)), again, "the resumed run counts the kept chunks once")

	// The shard parses, and its experts index as contiguous spans.
	h, err := safetensors.Parse(a[8:8+int(uint64(a[0])|uint64(a[1])<<8|uint64(a[2])<<16)], int64(len(a)))
	require.NoError(t, err)
	spans, err := ckpt.IndexExperts("fresh.safetensors", h)
	require.NoError(t, err)
	require.Len(t, spans, 900)
	// Scales are e8m0 bytes in 120..127, so kernels meet finite weights.
	sp := spans[ckpt.ExpertID{Layer: 1, Expert: 17}]
	for _, s := range a[sp.Offset+tinyInter*tinyLatent/2 : sp.Offset+tinyInter*tinyLatent/2+tinyInter*tinyLatent/32] {
		require.True(t, s >= 120 && s <= 127)
	}
}

func TestSliceLayoutHasK3Shapes(t *testing.T) {
	t.Parallel()
	l, err := NewSliceLayout(2)
	require.NoError(t, err)
	require.Equal(t, []int{0, 1}, l.Layers)
	require.False(t, sliceIsMLA(0), "one KDA and one MLA layer")
	require.True(t, sliceIsMLA(1))
	require.Len(t, l.Shards, 3)
	var experts int64 = k3Experts * ckpt.ExpertSpanBytes
	require.Equal(t, int64(15_722_348_544), experts)
	require.Greater(t, l.ShardBytes[1], experts+l.SpineBytes[0])
	require.Greater(t, l.SpineBytes[0], l.SpineBytes[1], "a KDA spine is larger than an MLA spine")
	require.Equal(t, int64(2*k3Vocab*k3Hidden*2+3*k3Hidden*2), l.GlobalBytes, "embedding, lm_head and the final norms")
	require.Greater(t, l.ShardBytes[0], int64(2*k3Vocab*k3Hidden*2), "embedding and lm_head")
	require.Equal(t, 2, SliceLayersFor(37_914_753_024), "1.5 × this machine's 24 GB")
	_, err = NewSliceLayout(0)
	require.Error(t, err)
	require.Equal(t, int64(ckpt.ExpertSpanBytes), sumSize(k3LayerExperts(0)[:6]), "one expert's six tensors")
	require.Equal(t, ckpt.ExpertSpanBytes, int(ckpt.ExpertSpanSize(k3Inter, k3Latent)))
}

func TestCreateSliceRefusesWhenTheDiskIsFull(t *testing.T) {
	t.Parallel()
	l, err := NewSliceLayout(2)
	require.NoError(t, err)
	dir := t.TempDir()
	err = l.CreateSlice(t.Context(), dir, func(string) (uint64, error) { return 10e9, nil }, func(int64) {})
	require.ErrorIs(t, err, ErrNoSpace)
	require.ErrorContains(t, err, "needs 38.26 GB more")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "nothing written")
}

func TestRenamedShardKeepsItsData(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "s.safetensors")
	old := tinyExperts(2, 3)
	require.NoError(t, writeSyntheticShard(t.Context(), path, old, 9, func(int64) {}))
	before, err := os.ReadFile(path)
	require.NoError(t, err)
	renamed := tinyExperts(0, 3) // same header length: "layers.2." → "layers.0."
	require.NoError(t, writeSyntheticShard(t.Context(), path, renamed, 9, func(int64) {}))
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	h, _ := shardHeader(renamed)
	require.Equal(t, h, after[:len(h)])
	require.Equal(t, before[len(h):], after[len(h):], "data untouched")

	// A longer header changes the size: the shard is written again whole.
	longer := tinyExperts(10, 3)
	require.NoError(t, writeSyntheticShard(t.Context(), path, longer, 9, func(int64) {}))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	h, _ = shardHeader(longer)
	require.Equal(t, h, b[:len(h)])
	require.Len(t, b, len(h)+int(sumSize(longer)))
}

// BenchmarkSyntheticFill is the slice generator's fill rate (its limit is the
// disk's write rate, which bench slice prints while writing).
func BenchmarkSyntheticFill(b *testing.B) {
	ts := k3LayerExperts(1)[:6]
	h, offs := shardHeader(ts)
	buf := make([]byte, shardChunk)
	b.SetBytes(shardChunk)
	for b.Loop() {
		fillChunk(buf, int64(len(h)), h, ts, offs, 1)
	}
}
