package engine

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/internal/testref"
	"github.com/deltafin/deltafin/kernels"
	"github.com/stretchr/testify/require"
)

// Test helpers that rewrite real checkpoints: read every tensor of a model
// directory, let a test change names, dtypes, shapes, order or the config,
// and write it back as shards with an index.

type stTensor struct {
	name  string
	dtype string
	shape []int64
	data  []byte
}

// readShard returns a safetensors file's tensors in file order.
func readShard(t *testing.T, path string) []stTensor {
	t.Helper()
	var out []stTensor
	for _, x := range testref.All(t, path) {
		out = append(out, stTensor{x.Name, x.DType, x.Shape, x.Data})
	}
	return out
}

// writeShard writes tensors back to back in the given order.
func writeShard(t *testing.T, path string, ts []stTensor) {
	t.Helper()
	hdr := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	var off int64
	for _, x := range ts {
		hdr[x.name] = map[string]any{"dtype": x.dtype, "shape": x.shape, "data_offsets": []int64{off, off + int64(len(x.data))}}
		off += int64(len(x.data))
	}
	h, err := json.Marshal(hdr)
	require.NoError(t, err)
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	buf := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	buf = append(buf, h...)
	for _, x := range ts {
		buf = append(buf, x.data...)
	}
	require.NoError(t, os.WriteFile(path, buf, 0o644))
}

// model is a checkpoint being rewritten: shards by file name and the config.
type model struct {
	shards map[string][]stTensor
	config map[string]any
}

// readModel reads a model directory (sharded or single-file).
func readModel(t *testing.T, dir string) *model {
	t.Helper()
	m := &model{shards: map[string][]stTensor{}}
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &m.config))
	ix, err := ckpt.OpenIndex(t.Context(), dir, nil)
	require.NoError(t, err)
	for _, s := range ix.Shards {
		m.shards[s.Name] = readShard(t, filepath.Join(dir, s.Name))
	}
	require.NoError(t, ix.Close())
	return m
}

// write stores the model in a new directory with an index and returns it.
func (m *model) write(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	b, err := json.MarshalIndent(m.config, "", " ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644))
	wm := map[string]string{}
	for f, ts := range m.shards {
		writeShard(t, filepath.Join(dir, f), ts)
		for _, x := range ts {
			wm[x.name] = f
		}
	}
	b, err = json.Marshal(map[string]any{"metadata": map[string]any{}, "weight_map": wm})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, indexFile), b, 0o644))
	return dir
}

// find returns the shard and position of the named tensor.
func (m *model) find(t *testing.T, name string) (string, int) {
	t.Helper()
	files := make([]string, 0, len(m.shards))
	for f := range m.shards {
		files = append(files, f)
	}
	sort.Strings(files)
	for _, f := range files {
		for i, x := range m.shards[f] {
			if x.name == name {
				return f, i
			}
		}
	}
	t.Fatalf("no tensor %s", name)
	return "", 0
}

func (m *model) tensor(t *testing.T, name string) *stTensor {
	f, i := m.find(t, name)
	return &m.shards[f][i]
}

func (m *model) remove(t *testing.T, name string) {
	f, i := m.find(t, name)
	m.shards[f] = append(m.shards[f][:i], m.shards[f][i+1:]...)
}

// TestKimiLinearMXFP4Experts loads Kimi-Linear's routed experts from
// experts_mxfp4.safetensors (compressed-tensors layout) instead of the F32
// ones: every value is exactly representable, so the logits are identical
// (bit for bit on the reference backend, whose summation order does not
// depend on the dtype; within the reference tolerance on the default one).
func TestKimiLinearMXFP4Experts(t *testing.T) {
	t.Parallel()
	src := filepath.Join("..", "testdata", "kimi-linear-tiny")
	mm := readModel(t, filepath.Join(src, "hf"))
	var spine []stTensor
	for _, x := range mm.shards["model.safetensors"] {
		if !strings.Contains(x.name, ".experts.") {
			spine = append(spine, x)
		}
	}
	mm.shards = map[string][]stTensor{
		"model-00001-of-000002.safetensors": spine,
		"model-00002-of-000002.safetensors": readShard(t, filepath.Join(src, "experts_mxfp4.safetensors")),
	}
	mm.config["quantization_config"] = map[string]any{
		"format": "mxfp4-pack-quantized", "quant_method": "compressed-tensors",
		"config_groups": map[string]any{"group_0": map[string]any{
			"format": "mxfp4-pack-quantized", "weights": map[string]any{"group_size": 32, "num_bits": 4, "type": "float"}}},
	}
	dir := mm.write(t)

	f32, err := Open(t.Context(), filepath.Join(src, "hf"), Options{Backend: kernels.Ref()})
	require.NoError(t, err)
	defer f32.Close()
	mx, err := Open(t.Context(), dir, Options{Backend: kernels.Ref()})
	require.NoError(t, err)
	defer mx.Close()
	require.True(t, mx.cfg.ExpertsMXFP4)

	ref := loadRef(t, filepath.Join(src, "reference.safetensors"))
	for _, tag := range []string{"short", "long"} {
		ids := ref.ints(t, tag+".input_ids")
		a, err := f32.NewSession().Forward(t.Context(), ids, true)
		require.NoError(t, err)
		b, err := mx.NewSession().Forward(t.Context(), ids, true)
		require.NoError(t, err)
		d, _ := maxAbsDiff(flatten(a), flatten(b))
		require.Zero(t, d, "%s: MXFP4 experts change the logits", tag)
	}
	def, err := Open(t.Context(), dir, Options{})
	require.NoError(t, err)
	defer def.Close()
	worst := checkReference(t, def, ref, []string{"short", "long"}, 2e-3)
	fmt.Printf("kimi-linear-tiny (MXFP4 experts): max |Δlogit| = %.3g\n", worst)
}
