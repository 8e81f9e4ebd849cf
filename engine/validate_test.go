package engine

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	ckpt "github.com/deltafin/deltafin/checkpoint"
)

// TestValidation breaks one thing at a time in the K3 tiny checkpoint and
// checks that Open names the file, the tensor and the problem.
func TestValidation(t *testing.T) {
	t.Parallel()
	const (
		lp     = "language_model.model.layers."
		shard1 = "model-00001-of-000004.safetensors"
		shard2 = "model-00002-of-000004.safetensors"
	)
	src := filepath.Join("..", "testdata", "k3-tiny")
	tests := []struct {
		name   string
		break_ func(t *testing.T, m *model)
		after  func(t *testing.T, dir string) // damage files after writing
		want   []string
	}{
		{
			name: "wrong shape",
			break_: func(t *testing.T, m *model) {
				x := m.tensor(t, lp+"3.self_attn.q_b_proj.weight")
				x.shape = []int64{48, 96}
			},
			want: []string{shard2, `"` + lp + `3.self_attn.q_b_proj.weight"`, "shape [48 96], want [96 48]"},
		},
		{
			name: "wrong dtype",
			break_: func(t *testing.T, m *model) {
				m.tensor(t, lp+"0.self_attn.A_log").dtype = "I32"
			},
			want: []string{shard1, `"` + lp + `0.self_attn.A_log"`, "dtype I32, want BF16, F16 or F32"},
		},
		{
			// K3's A_log is [head_dim]: one rate per head, then zero
			// padding. A non-zero pad is a layout no reader of K3 reads.
			name: "A_log padding not zero",
			break_: func(t *testing.T, m *model) {
				x := m.tensor(t, lp+"0.self_attn.A_log")
				binary.LittleEndian.PutUint32(x.data[5*4:], math.Float32bits(0.25))
			},
			want: []string{shard1, `"` + lp + `0.self_attn.A_log": entry 5 is 0.25`, "one decay rate per head in entries 0..3 and zero padding"},
		},
		{
			name: "expert not U8",
			break_: func(t *testing.T, m *model) {
				x := m.tensor(t, lp+"2.block_sparse_moe.experts.7.w2.weight_scale")
				x.dtype, x.shape = "BF16", []int64{64, 1}
			},
			want: []string{shard1, `"` + lp + `2.block_sparse_moe.experts.7.w2.weight_scale"`, "dtype BF16, want U8"},
		},
		{
			name:   "missing tensor",
			break_: func(t *testing.T, m *model) { m.remove(t, lp+"5.self_attn.o_norm.weight") },
			want:   []string{`tensor "` + lp + `5.self_attn.o_norm.weight" is missing`},
		},
		{
			name: "unexpected tensor",
			break_: func(t *testing.T, m *model) {
				m.shards[shard1] = append(m.shards[shard1], stTensor{lp + "0.self_attn.extra.weight", "BF16", []int64{4}, make([]byte, 8)})
			},
			want: []string{shard1, `"` + lp + `0.self_attn.extra.weight"`, "unexpected tensor"},
		},
		{
			name: "non-contiguous expert",
			break_: func(t *testing.T, m *model) {
				f, i := m.find(t, lp+"2.block_sparse_moe.experts.7.w2.weight_packed")
				ts := m.shards[f]
				ts[i], ts[i+1] = ts[i+1], ts[i] // scale before packed
			},
			want: []string{shard1, `"` + lp + `2.block_sparse_moe.experts.7.w2.weight_packed"`, "layer 2 expert 7 is not contiguous", `right after "` + lp + `2.block_sparse_moe.experts.7.w1.weight_scale"`},
		},
		{
			name: "expert split across shards",
			break_: func(t *testing.T, m *model) {
				f, i := m.find(t, lp+"1.block_sparse_moe.experts.3.w3.weight_scale")
				x := m.shards[f][i]
				m.shards[f] = append(m.shards[f][:i], m.shards[f][i+1:]...)
				m.shards[shard2] = append(m.shards[shard2], x)
			},
			want: []string{shard1, "layer 1 expert 3 has no w3.weight_scale in this file"},
		},
		{
			name: "truncated shard",
			after: func(t *testing.T, dir string) {
				p := filepath.Join(dir, shard2)
				st, err := os.Stat(p)
				require.NoError(t, err)
				require.NoError(t, os.Truncate(p, st.Size()-100))
			},
			want: []string{shard2, "truncated"},
		},
		{
			name:  "index maps a tensor to another file",
			after: editIndex(func(wm map[string]string) { wm[lp+"3.self_attn.q_b_proj.weight"] = shard1 }),
			want:  []string{shard2, `"` + lp + `3.self_attn.q_b_proj.weight"`, "not mapped to this file by model.safetensors.index.json", `maps to "` + shard1 + `"`},
		},
		{
			name:  "index lists a tensor the file lacks",
			after: editIndex(func(wm map[string]string) { wm[lp+"0.self_attn.bogus.weight"] = shard1 }),
			want:  []string{shard1, `"` + lp + `0.self_attn.bogus.weight" listed in model.safetensors.index.json is not in the file`},
		},
		{
			name:  "index lacks a tensor",
			after: editIndex(func(wm map[string]string) { delete(wm, lp+"3.self_attn.q_b_proj.weight") }),
			want:  []string{shard2, `"` + lp + `3.self_attn.q_b_proj.weight" is not mapped to this file`},
		},
		{
			name: "bad config",
			break_: func(t *testing.T, m *model) {
				m.config["text_config"].(map[string]any)["hidden_act"] = "gelu"
			},
			want: []string{"config.json", `hidden_act "gelu"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := readModel(t, src)
			if tt.break_ != nil {
				tt.break_(t, m)
			}
			dir := m.write(t)
			if tt.after != nil {
				tt.after(t, dir)
			}
			_, err := Open(t.Context(), dir, Options{})
			require.Error(t, err)
			t.Log(err)
			if tt.name == "A_log padding not zero" {
				// Refused at open also when every spine layer streams.
				_, serr := Open(t.Context(), dir, Options{Stream: &StreamOptions{Plan: &BudgetPlan{}}})
				require.ErrorIs(t, serr, ErrCheckpoint)
				require.Contains(t, serr.Error(), tt.want[1])
			}
			if tt.name == "bad config" {
				require.ErrorIs(t, err, ErrConfig)
			} else {
				require.ErrorIs(t, err, ErrCheckpoint)
			}
			for _, w := range tt.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}

	t.Run("rewritten but intact", func(t *testing.T) {
		m, err := Open(t.Context(), readModel(t, src).write(t), Options{})
		require.NoError(t, err)
		require.NoError(t, m.Close())
	})
}

// countingSource records the bytes read or ensured past its file's header;
// it is an Ensurer, so the engine reads weights by descriptor after
// Ensure, as from a stream install.
type countingSource struct {
	ckpt.Source
	header int64 // 8 + the header's length
	past   *atomic.Int64
}

func (s countingSource) ReadAt(ctx context.Context, p []byte, off int64) error {
	if end := off + int64(len(p)); end > s.header {
		s.past.Add(end - max(off, s.header))
	}
	return s.Source.ReadAt(ctx, p, off)
}

func (s countingSource) Ensure(_ context.Context, off, n int64) error {
	s.past.Add(n)
	return nil
}

// TestOpenReadsNoWeightBeforeValidating: a checkpoint that fails
// validation is refused without a byte of weight read; the same source
// over the intact checkpoint does read its weights.
func TestOpenReadsNoWeightBeforeValidating(t *testing.T) {
	t.Parallel()
	var past atomic.Int64
	open := func(ctx context.Context, path string) (ckpt.Source, error) {
		s, err := ckpt.OpenFile(ctx, path)
		if err != nil {
			return nil, err
		}
		var prefix [8]byte
		if err := s.ReadAt(ctx, prefix[:], 0); err != nil {
			return nil, err
		}
		return countingSource{s, 8 + int64(binary.LittleEndian.Uint64(prefix[:])), &past}, nil
	}
	m := readModel(t, filepath.Join("..", "testdata", "k3-tiny"))
	m.shards["model-00001-of-000004.safetensors"] = append(m.shards["model-00001-of-000004.safetensors"],
		stTensor{"language_model.model.layers.0.self_attn.extra.weight", "BF16", []int64{4}, make([]byte, 8)})
	_, err := Open(t.Context(), m.write(t), Options{OpenSource: open})
	require.ErrorContains(t, err, "unexpected tensor")
	require.Zero(t, past.Load(), "bytes past a header read before validation")

	model, err := Open(t.Context(), filepath.Join("..", "testdata", "k3-tiny"), Options{OpenSource: open})
	require.NoError(t, err)
	require.NoError(t, model.Close())
	require.Positive(t, past.Load())
}

// editIndex returns a damage step that rewrites the weight_map of a model
// directory's index.
func editIndex(edit func(wm map[string]string)) func(t *testing.T, dir string) {
	return func(t *testing.T, dir string) {
		p := filepath.Join(dir, indexFile)
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		var idx struct {
			WeightMap map[string]string `json:"weight_map"`
		}
		require.NoError(t, json.Unmarshal(b, &idx))
		edit(idx.WeightMap)
		b, err = json.Marshal(idx)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(p, b, 0o644))
	}
}
