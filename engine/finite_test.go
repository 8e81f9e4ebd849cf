package engine

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/experts"
	"github.com/deltafin/deltafin/internal/testref"
	"github.com/deltafin/deltafin/kernels"
)

// patchedTiny copies k3-tiny and writes b at off of shard.
func patchedTiny(t *testing.T, shard string, off int64, b []byte) string {
	t.Helper()
	dir := testref.CopyModel(t, "k3-tiny", t.TempDir())
	f, err := os.OpenFile(filepath.Join(dir, shard), os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = f.WriteAt(b, off)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	return dir
}

// TestNaNSpineIsRefusedAtLoad: BF16 0xFFFF (NaN) and 0x7F80 (+Inf) in a
// pinned spine tensor fail Open with an error naming the tensor, in RAM
// and streamed with every layer pinned.
func TestNaNSpineIsRefusedAtLoad(t *testing.T) {
	t.Parallel()
	m := openK3Tiny(t)
	for _, name := range []string{"model.norm.weight", "model.layers.0.self_attn.o_proj.weight", "model.embed_tokens.weight"} {
		r := m.ck.tensors[name]
		require.NotNil(t, r, name)
		require.Equal(t, "BF16", r.t.DType, name)
		for _, bits := range [][]byte{{0xff, 0xff}, {0x80, 0x7f}} {
			dir := patchedTiny(t, r.shard.name, r.t.Offset+r.t.Size/2&^1, bits)
			for _, opts := range []Options{{}, {Stream: &StreamOptions{Plan: &experts.BudgetPlan{PinnedLayers: 1 << 20, CacheExperts: 2}}}} {
				_, err := Open(t.Context(), dir, opts)
				require.ErrorIs(t, err, ckpt.ErrNotFinite, name)
				require.ErrorContains(t, err, r.full)
				require.ErrorContains(t, err, "NaN or Inf")
			}
		}
	}
}

// TestNaNExpertScaleIsRefusedOnFirstRead: an MXFP4 scale byte 255 (NaN in
// e8m0) fails the first read of that expert, naming its scale tensor: at
// Open in RAM, at the generation that routes to it when streamed (or at
// Open, when the store reads it ahead).
func TestNaNExpertScaleIsRefusedOnFirstRead(t *testing.T) {
	t.Parallel()
	m := openK3Tiny(t)
	ref := loadRef(t, filepath.Join("..", "testdata", "k3-tiny", "reference.safetensors"))
	prompt := ref.ints(t, "short.input_ids")
	// Every expert of layer 1 gets a NaN scale in w2: whatever the router
	// picks, the first read fails.
	var patches []struct {
		shard string
		off   int64
	}
	for e := range m.cfg.Experts {
		r := m.ck.tensors[ckpt.ExpertPrefix(1, e)+"w2.weight_scale"]
		require.NotNil(t, r)
		patches = append(patches, struct {
			shard string
			off   int64
		}{r.shard.name, r.t.Offset + 3})
	}
	want := func(t *testing.T, err error) {
		require.ErrorIs(t, err, ckpt.ErrNotFinite)
		require.Regexp(t, `tensor "language_model\.model\.layers\.1\.block_sparse_moe\.experts\.\d+\.w2\.weight_scale": scale 3 is 255`, err.Error())
	}
	dir := patchedTiny(t, patches[0].shard, patches[0].off, []byte{0xff})
	for _, p := range patches[1:] {
		f, err := os.OpenFile(filepath.Join(dir, p.shard), os.O_RDWR, 0)
		require.NoError(t, err)
		_, err = f.WriteAt([]byte{0xff}, p.off)
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
	_, err := Open(t.Context(), dir, Options{})
	want(t, err)

	sm, err := Open(t.Context(), dir, Options{Stream: &StreamOptions{Plan: &experts.BudgetPlan{PinnedLayers: 1 << 20, CacheExperts: 2}}})
	if err != nil {
		want(t, err)
		return
	}
	defer sm.Close()
	_, err = sm.NewSession().Generate(t.Context(), prompt, GenerateOptions{MaxNew: 2}, func(int) error { return nil })
	want(t, err)
}

// TestFirstNonFiniteFindsEveryLane: the word-at-a-time BF16 scan finds a
// NaN or Inf in each of the four lanes of a word, at the end of a tensor
// with an odd tail, and passes finite extremes (max, -max, subnormals).
func TestFirstNonFiniteFindsEveryLane(t *testing.T) {
	t.Parallel()
	finite := []uint16{0x7f7f, 0xff7f, 0x0001, 0x8001, 0x3f80, 0x0000, 0x8000, 0x7f00, 0x00ff}
	for n := 1; n <= 21; n++ {
		b := make([]byte, 2*n)
		for i := range n {
			binary.LittleEndian.PutUint16(b[2*i:], finite[i%len(finite)])
		}
		m := kernels.Matrix{DType: kernels.BF16, Rows: 1, Cols: n, Data: b}
		require.Equal(t, -1, firstNonFinite(m), "n=%d", n)
		for at := range n {
			for _, bad := range []uint16{0xffff, 0x7f80, 0xff80, 0x7fc1} {
				c := append([]byte(nil), b...)
				binary.LittleEndian.PutUint16(c[2*at:], bad)
				m.Data = c
				require.Equal(t, at, firstNonFinite(m), "n=%d at=%d bits=%#04x", n, at, bad)
			}
		}
	}
}

// BenchmarkFiniteScan measures the load-time NaN/Inf scan of a 64 MiB BF16
// tensor against summing the same bytes as words (the memory-bound floor);
// compare the two MB/s figures.
func BenchmarkFiniteScan(b *testing.B) {
	data := make([]byte, 64<<20)
	for i := range len(data) / 2 {
		binary.LittleEndian.PutUint16(data[2*i:], 0x3f80)
	}
	m := kernels.Matrix{DType: kernels.BF16, Rows: 1, Cols: len(data) / 2, Data: data}
	b.Run("scan", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if firstNonFinite(m) != -1 {
				b.Fatal("finite data reported")
			}
		}
	})
	b.Run("sum words", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		var s uint64
		for b.Loop() {
			for i := 0; i+8 <= len(data); i += 8 {
				s += binary.LittleEndian.Uint64(data[i:])
			}
		}
		if s == 1 {
			b.Log(s)
		}
	})
}
