package engine

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/checkpoint/safetensors"
	"github.com/deltafin/deltafin/internal/atomicfile"
	"github.com/deltafin/deltafin/kernels"
)

// The int8 spine (opt-in, NOT exact): a per-row int8 copy of every spine
// matrix, half the bytes of BF16, for machines where the spine's reads or
// its memory traffic bound the token rate. Row r of W becomes
//
//	scale_r = absmax(W[r,:]) / 127, rounded to f16 (half to even)
//	q[r,c]  = round_half_even(W[r,c] / scale_r), clamped to ±127
//
// and the kernels compute (Σ_c q[r,c]·x[c])·scale_r. Converted: every 2-D
// float matrix the forward pass multiplies, lm_head included. Kept as
// stored: the embedding (a row lookup, one row per token), the MoE routers
// (expert choice stays the BF16 model's as far as the inputs allow), norms,
// biases, convs and the routed experts (already MXFP4).
//
// Layout: a directory next to the model (SpineInt8Dir), one safetensors file
// per source shard holding "<name>" I8 [rows, cols] and "<name>_scale" F16
// [rows] for each converted tensor, plus model.safetensors.index.json; the
// manifest spine-int8.json is written last and names the source shards'
// sizes. Each file is written to a temporary name, fsynced and renamed, so a
// file that exists is whole; an interrupted conversion resumes at the first
// missing file.

// ErrSpineInt8 marks a missing, partial or foreign int8 spine.
var ErrSpineInt8 = errors.New("engine: int8 spine")

const spineInt8Manifest = "spine-int8.json"

// SpineInt8Dir is where the int8 spine of the model in dir lives.
func SpineInt8Dir(dir string) string { return filepath.Clean(dir) + ".spine-int8" }

type int8Manifest struct {
	Format  int              `json:"format"`
	Sources map[string]int64 `json:"sources"` // source shard → size
	Tensors int              `json:"tensors"`
}

// int8Convertible says whether the spine tensor name (unprefixed) gets an
// int8 copy.
func int8Convertible(name string, r *tensorRef) bool {
	if ckpt.IsExpertTensor(name) || name == "model.embed_tokens.weight" ||
		strings.HasSuffix(name, "block_sparse_moe.gate.weight") || !strings.HasSuffix(name, ".weight") {
		return false
	}
	if _, ok := matrixDType(r.t.DType); !ok || len(r.t.Shape) != 2 || r.t.Shape[0] < 2 {
		return false
	}
	return true
}

// ConvertSpineInt8 writes the int8 spine of the model in dir into out
// (resumable; see above). progress, when set, gets the source bytes done
// and the total after each tensor.
func ConvertSpineInt8(ctx context.Context, dir, out string, progress func(done, total int64)) error {
	if _, err := loadConfig(dir); err != nil {
		return err
	}
	ck, err := openCheckpoint(ctx, dir, ckpt.OpenFile)
	if err != nil {
		return err
	}
	defer ck.close()
	byShard := map[*shard][]string{}
	var total int64
	for name, r := range ck.tensors {
		if int8Convertible(name, r) {
			byShard[r.shard] = append(byShard[r.shard], name)
			total += r.t.Size
		}
	}
	if len(byShard) == 0 {
		return fmt.Errorf("%w: %s has no spine matrix to convert", ErrSpineInt8, dir)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("%w: %v", ErrSpineInt8, err)
	}
	man := int8Manifest{Format: 1, Sources: map[string]int64{}}
	index := map[string]string{}
	var done int64
	for _, s := range ck.shards {
		names := byShard[s]
		if len(names) == 0 {
			continue
		}
		sort.Strings(names)
		man.Sources[s.name] = s.src.Size()
		man.Tensors += len(names)
		for _, n := range names {
			index[ck.tensors[n].full] = s.name
			index[ck.tensors[n].full+"_scale"] = s.name
			done += ck.tensors[n].t.Size
		}
		path := filepath.Join(out, s.name)
		if _, err := os.Stat(path); err == nil {
			if progress != nil {
				progress(done, total)
			}
			continue // written and renamed by an earlier run: whole
		}
		if err := writeInt8Shard(ctx, ck, names, path); err != nil {
			return err
		}
		if progress != nil {
			progress(done, total)
		}
	}
	idx, _ := json.Marshal(map[string]any{"metadata": map[string]any{"format": "deltafin-spine-int8"}, "weight_map": index})
	if err := atomicfile.WriteFile(filepath.Join(out, indexFile), idx, 0o600); err != nil {
		return err
	}
	mb, _ := json.MarshalIndent(man, "", "  ")
	return atomicfile.WriteFile(filepath.Join(out, spineInt8Manifest), mb, 0o600)
}

// writeInt8Shard quantises names (one source shard's matrices) into path.
func writeInt8Shard(ctx context.Context, ck *checkpoint, names []string, path string) error {
	var ts []safetensors.Tensor
	for _, n := range names {
		r := ck.tensors[n]
		rows, cols := r.t.Shape[0], r.t.Shape[1]
		ts = append(ts, safetensors.Tensor{Name: r.full, DType: "I8", Shape: []int64{rows, cols}},
			safetensors.Tensor{Name: r.full + "_scale", DType: "F16", Shape: []int64{rows}})
	}
	hdr := safetensors.Encode(ts)
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".partial.*")
	if err != nil {
		return fmt.Errorf("%w: %v", ErrSpineInt8, err)
	}
	defer os.Remove(tmp.Name()) // after the rename: nothing to remove
	defer tmp.Close()
	w := bufio.NewWriterSize(tmp, 4<<20)
	if _, err := w.Write(hdr); err != nil {
		return fmt.Errorf("%w: %v", ErrSpineInt8, err)
	}
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		m, err := ck.matrix(ctx, n)
		if err != nil {
			return err
		}
		q, scales := quantizeInt8(m)
		if _, err := w.Write(q); err != nil {
			return fmt.Errorf("%w: %v", ErrSpineInt8, err)
		}
		if _, err := w.Write(scales); err != nil {
			return fmt.Errorf("%w: %v", ErrSpineInt8, err)
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("%w: %v", ErrSpineInt8, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("%w: %v", ErrSpineInt8, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("%w: %v", ErrSpineInt8, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("%w: %v", ErrSpineInt8, err)
	}
	return nil
}

// quantizeInt8 returns the int8 rows and the f16 scales of m.
func quantizeInt8(m kernels.Matrix) (q, scales []byte) {
	q = make([]byte, m.Rows*m.Cols)
	scales = make([]byte, 2*m.Rows)
	row := make([]float32, m.Cols)
	for r := 0; r < m.Rows; r++ {
		kernels.DecodeRow(row, m, r)
		var amax float32
		for _, v := range row {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		h := f32ToF16(amax / 127)
		binary.LittleEndian.PutUint16(scales[2*r:], h)
		s := kernels.F16ToF32(h)
		out := q[r*m.Cols : (r+1)*m.Cols]
		for c, v := range row {
			var x float64
			if s != 0 {
				x = math.RoundToEven(float64(v) / float64(s))
			}
			out[c] = byte(int8(max(-127, min(127, x))))
		}
	}
	return q, scales
}

// f32ToF16 rounds x to the nearest IEEE half, ties to even; overflow gives
// infinity, values below the subnormal range round to zero.
func f32ToF16(x float32) uint16 {
	b := math.Float32bits(x)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23&0xff) - 127
	mant := b & 0x7fffff
	switch {
	case exp == 128: // Inf, NaN
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	case exp > 15:
		return sign | 0x7c00
	case exp >= -14: // normal half
		h := uint32(exp+15)<<10 | mant>>13
		rest := mant & 0x1fff
		if rest > 0x1000 || (rest == 0x1000 && h&1 == 1) {
			h++ // may carry into the exponent, up to infinity: still right
		}
		return sign | uint16(h)
	case exp >= -25: // subnormal half: value = m·2^-24
		full := mant | 0x800000 // 24 significant bits, value full·2^(exp−23)
		shift := uint(-exp - 1) // to units of 2^-24: full >> (−14−exp+13)
		h := full >> shift
		rest := full & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rest > half || (rest == half && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	}
	return sign
}

// openSpineInt8 opens the int8 spine in dir and checks that it was made
// from the checkpoint ck (same source shards and sizes).
func openSpineInt8(ctx context.Context, dir string, ck *checkpoint) (*checkpoint, error) {
	b, err := os.ReadFile(filepath.Join(dir, spineInt8Manifest))
	if err != nil {
		return nil, fmt.Errorf("%w: %s is not a finished conversion (run deltafin convert-spine-int8): %v", ErrSpineInt8, dir, err)
	}
	var man int8Manifest
	if err := json.Unmarshal(b, &man); err != nil || man.Format != 1 {
		return nil, fmt.Errorf("%w: %s: unreadable manifest", ErrSpineInt8, dir)
	}
	for _, s := range ck.shards {
		if n, ok := man.Sources[s.name]; ok && n != s.src.Size() {
			return nil, fmt.Errorf("%w: %s was converted from a different %s (%d bytes, now %d): convert again", ErrSpineInt8, dir, s.name, n, s.src.Size())
		}
	}
	i8, err := openCheckpoint(ctx, dir, ckpt.OpenFile)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSpineInt8, err)
	}
	return i8, nil
}

// int8Matrix loads name's int8 copy with its scales widened to the f32 the
// kernels take; ok is false when the copy has no such tensor.
func int8Matrix(ctx context.Context, i8 *checkpoint, name string, want kernels.Matrix) (kernels.Matrix, bool, error) {
	if i8.tensors[name] == nil {
		return kernels.Matrix{}, false, nil
	}
	q, r, err := i8.read(ctx, name)
	if err != nil {
		return kernels.Matrix{}, false, err
	}
	sb, sr, err := i8.read(ctx, name+"_scale")
	if err != nil {
		return kernels.Matrix{}, false, err
	}
	if r.t.DType != "I8" || sr.t.DType != "F16" || len(r.t.Shape) != 2 || int(r.t.Shape[0]) != want.Rows ||
		int(r.t.Shape[1]) != want.Cols || len(sb) != 2*want.Rows {
		return kernels.Matrix{}, false, fmt.Errorf("%w: %s does not match the model's [%d,%d]", ErrSpineInt8, r.full, want.Rows, want.Cols)
	}
	scales := make([]byte, 4*want.Rows)
	for i := range want.Rows {
		binary.LittleEndian.PutUint32(scales[4*i:], math.Float32bits(kernels.F16ToF32(binary.LittleEndian.Uint16(sb[2*i:]))))
	}
	m := kernels.Matrix{DType: kernels.I8, Rows: want.Rows, Cols: want.Cols, Data: q, Scales: scales}
	if err := m.Validate(); err != nil {
		return kernels.Matrix{}, false, r.errorf("%v", err)
	}
	return m, true, nil
}
