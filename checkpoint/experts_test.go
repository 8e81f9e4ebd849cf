package checkpoint

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/checkpoint/safetensors"
)

// tensor is one header entry for a test shard.
type tensor struct {
	name, dtype string
	size        int64
}

// header parses a safetensors header holding ts back to back from offset 0.
func header(t *testing.T, ts []tensor) *safetensors.Header {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"__metadata__":{"format":"pt"}`)
	var off int64
	for _, x := range ts {
		fmt.Fprintf(&b, `,%q:{"dtype":%q,"shape":[%d],"data_offsets":[%d,%d]}`,
			x.name, x.dtype, x.size/safetensors.DTypeSize(x.dtype), off, off+x.size)
		off += x.size
	}
	b.WriteString("}")
	h, err := safetensors.Parse([]byte(b.String()), int64(8+b.Len())+off)
	require.NoError(t, err)
	return h
}

// experts lays out n experts of layer 1 in the canonical order, each part
// size bytes, after a spine tensor.
func experts(n int, size int64) []tensor {
	ts := []tensor{{TextPrefix + "model.layers.1.block_sparse_moe.gate.weight", "BF16", 16}}
	for e := n - 1; e >= 0; e-- { // file order differs from id order
		for part := range 6 {
			ts = append(ts, tensor{ExpertName(ExpertID{Layer: 1, Expert: e}, part), "U8", size})
		}
	}
	return ts
}

func TestIndexExpertsFindsEachSpan(t *testing.T) {
	t.Parallel()
	h := header(t, experts(3, 10))
	spans, err := IndexExperts("s.safetensors", h)
	require.NoError(t, err)
	require.Len(t, spans, 3)
	base := h.DataStart + 16 // after the spine tensor
	for e := range 3 {
		sp := spans[ExpertID{Layer: 1, Expert: e}]
		require.Equal(t, ExpertSpan{Shard: "s.safetensors", Offset: base + int64(2-e)*60, Size: 60}, sp)
		require.Equal(t, sp.Offset+60, sp.End())
	}
}

func TestIndexExpertsRejectsBrokenLayouts(t *testing.T) {
	t.Parallel()
	good := experts(2, 4)
	swapped := append([]tensor(nil), good...)
	swapped[2], swapped[3] = swapped[3], swapped[2] // w2 packed before w1 scale
	missing := append([]tensor(nil), good[:6]...)
	wrongType := append([]tensor(nil), good...)
	wrongType[1].dtype = "I8"
	for _, tc := range []struct {
		name string
		ts   []tensor
		want string
	}{
		{"parts out of order", swapped, `"language_model.model.layers.1.block_sparse_moe.experts.1.w1.weight_scale": layer 1 expert 1 is not contiguous`},
		{"a part missing", missing, "layer 1 expert 1 has no w3.weight_scale in this file"},
		{"not U8", wrongType, "want U8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := IndexExperts("x.safetensors", header(t, tc.ts))
			require.ErrorIs(t, err, ErrExpertLayout)
			require.ErrorContains(t, err, tc.want)
			require.ErrorContains(t, err, "x.safetensors")
		})
	}
}

// TestIndexExpertsOnK3Tiny indexes the tiny checkpoint's shards: every MoE
// layer has its experts, each one span of the K3 shape scaled down.
func TestIndexExpertsOnK3Tiny(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "testdata", "k3-tiny")
	files, err := filepath.Glob(filepath.Join(dir, "model-*.safetensors"))
	require.NoError(t, err)
	all := map[ExpertID]ExpertSpan{}
	for _, p := range files {
		f, err := os.Open(p)
		require.NoError(t, err)
		st, err := f.Stat()
		require.NoError(t, err)
		h, err := safetensors.Read(f, st.Size())
		f.Close()
		require.NoError(t, err)
		spans, err := IndexExperts(filepath.Base(p), h)
		require.NoError(t, err)
		for id, sp := range spans {
			all[id] = sp
			require.LessOrEqual(t, sp.End(), st.Size())
		}
	}
	require.NotEmpty(t, all)
	var size int64
	for _, sp := range all {
		if size == 0 {
			size = sp.Size
		}
		require.Equal(t, size, sp.Size, "every expert has the same span")
	}
}

func TestExpertSpanSizeOfK3(t *testing.T) {
	t.Parallel()
	require.Equal(t, int64(ExpertSpanBytes), ExpertSpanSize(3072, 3584))
}

func TestNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		id         ExpertID
		part       int
		ok, expert bool
		layer      int // LayerOf with 10 layers, -1: not in a layer
	}{
		{"language_model.model.layers.3.block_sparse_moe.experts.7.w2.weight_scale", ExpertID{Layer: 3, Expert: 7}, 3, true, true, -1},
		{"model.layers.3.block_sparse_moe.experts.7.w1.weight_packed", ExpertID{Layer: 3, Expert: 7}, 0, true, true, 3},
		{"model.layers.3.block_sparse_moe.experts.7.w1.weight", ExpertID{}, 0, false, true, 3},
		{"model.layers.3.block_sparse_moe.shared_experts.gate_proj.weight", ExpertID{}, 0, false, false, 3},
		{"model.layers.3.block_sparse_moe.experts.x.w1.weight_packed", ExpertID{}, 0, false, true, 3},
		{"model.layers.+3.block_sparse_moe.experts.7.w1.weight_packed", ExpertID{}, 0, false, true, -1},
		{"model.layers.12.input_layernorm.weight", ExpertID{}, 0, false, false, -1},
		{"model.layers.4", ExpertID{}, 0, false, false, -1},
		{"model.embed_tokens.weight", ExpertID{}, 0, false, false, -1},
	} {
		id, part, ok := ParseExpertName(tc.name)
		require.Equal(t, tc.ok, ok, tc.name)
		require.Equal(t, tc.id, id, tc.name)
		require.Equal(t, tc.part, part, tc.name)
		require.Equal(t, tc.expert, IsExpertTensor(strings.TrimPrefix(tc.name, TextPrefix)), tc.name)
		l, in := LayerOf(tc.name, 10)
		require.Equal(t, tc.layer >= 0, in, tc.name)
		if in {
			require.Equal(t, tc.layer, l, tc.name)
		}
	}
	require.Equal(t, "model.layers.5.", LayerPrefix(5))
	require.Equal(t, "model.layers.5.block_sparse_moe.experts.9.", ExpertPrefix(5, 9))
	require.Equal(t, "layer 5 expert 9", ExpertID{Layer: 5, Expert: 9}.String())
	require.Negative(t, ExpertID{Layer: 1, Expert: 9}.Compare(ExpertID{Layer: 2, Expert: 0}))
	require.Positive(t, ExpertID{Layer: 2, Expert: 1}.Compare(ExpertID{Layer: 2, Expert: 0}))
}

// FuzzExpertName checks that ParseExpertName reads back what ExpertName
// writes, and never accepts a name it would not write.
func FuzzExpertName(f *testing.F) {
	f.Add("language_model.model.layers.3.block_sparse_moe.experts.7.w2.weight_scale")
	f.Add("model.layers.03.block_sparse_moe.experts.7.w1.weight_packed")
	f.Add("model.layers.1.block_sparse_moe.experts.-1.w1.weight_packed")
	f.Fuzz(func(t *testing.T, name string) {
		id, part, ok := ParseExpertName(name)
		if !ok {
			return
		}
		require.GreaterOrEqual(t, id.Layer, 0)
		require.GreaterOrEqual(t, id.Expert, 0)
		back := ExpertName(id, part)
		if got, gotPart, ok := ParseExpertName(back); !ok || got != id || gotPart != part {
			t.Fatalf("%q → %v part %d → %q does not read back", name, id, part, back)
		}
	})
}
