package engine

import (
	"context"
	"fmt"
	"strings"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/checkpoint/safetensors"
	"github.com/deltafin/deltafin/kernels"
)

// indexFile maps tensor names to shards in a sharded checkpoint.
const indexFile = ckpt.IndexFile

// shard is one opened safetensors file.
type shard struct {
	name string // base name, for errors
	src  ckpt.Source
	hdr  *safetensors.Header
}

// tensorRef locates one tensor of the text model.
type tensorRef struct {
	full  string // the name in the file, for errors
	shard *shard
	t     safetensors.Tensor
	// indexed: model.safetensors.index.json maps it to its shard
	// (checkIndex).
	indexed bool
}

func (r *tensorRef) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s: tensor %q: %s", ErrCheckpoint, r.shard.name, r.full, fmt.Sprintf(format, args...))
}

// checkpoint is the set of shards of one model directory and the index of
// the text model's tensors by their unprefixed name.
type checkpoint struct {
	ix      *ckpt.Index // the shards as opened and parsed
	shards  []*shard
	tensors map[string]*tensorRef
	prefix  string // ckpt.TextPrefix when the checkpoint uses it, for error messages
	// experts are the MXFP4 routed experts' spans, set by validate.
	experts map[ckpt.ExpertID]ckpt.ExpertSpan
}

// openIndex is everything of opening dir that reads no weight: its
// config, the shards' headers and index, and the validation of every
// tensor against the config (ck.experts set).
func openIndex(ctx context.Context, dir string, open ckpt.OpenSource) (*config, *checkpoint, error) {
	c, err := loadConfig(dir)
	if err != nil {
		return nil, nil, err
	}
	ck, err := openCheckpoint(ctx, dir, open)
	if err != nil {
		return nil, nil, err
	}
	if err := ck.validate(c); err != nil {
		ck.close()
		return nil, nil, err
	}
	return c, ck, nil
}

// openCheckpoint opens the shards named by model.safetensors.index.json, or
// the single model.safetensors, and parses their headers (ckpt.OpenIndex:
// the one parse of the index), then indexes the text model's tensors.
func openCheckpoint(ctx context.Context, dir string, open ckpt.OpenSource) (*checkpoint, error) {
	ix, err := ckpt.OpenIndex(ctx, dir, open)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	ck := &checkpoint{ix: ix, prefix: ix.Prefix}
	if err := ck.index(); err != nil {
		ck.close()
		return nil, err
	}
	return ck, nil
}

// index indexes the text model's tensors by their unprefixed name. Its work
// is linear in the tensors, with a few allocations per shard (the full K3
// has 497,220 tensors in 96 shards).
func (ck *checkpoint) index() error {
	total := 0
	for _, s := range ck.ix.Shards {
		ck.shards = append(ck.shards, &shard{name: s.Name, src: s.Src, hdr: s.Header})
		total += len(s.Header.Tensors)
	}
	prefixed := ck.prefix != ""
	ck.tensors = make(map[string]*tensorRef, total)
	for _, s := range ck.shards {
		refs := make([]tensorRef, len(s.hdr.Tensors)) // one block per shard
		for i, t := range s.hdr.Tensors {
			name := t.Name
			if prefixed {
				// In the multimodal wrapper, unprefixed tensors are the
				// vision tower and projector, which a text engine ignores.
				var text bool
				if name, text = strings.CutPrefix(name, ckpt.TextPrefix); !text {
					continue
				}
			}
			if prev, dup := ck.tensors[name]; dup {
				return fmt.Errorf("%w: tensor %q is in both %s and %s", ErrCheckpoint, t.Name, prev.shard.name, s.name)
			}
			refs[i] = tensorRef{full: t.Name, shard: s, t: t}
			ck.tensors[name] = &refs[i]
		}
	}
	if ck.ix.Entries != nil {
		return ck.checkIndex(ck.ix.Entries)
	}
	return nil
}

// checkIndex checks the index against the headers: every entry names a
// tensor of its file, and every text tensor has an entry naming its file.
func (ck *checkpoint) checkIndex(index []safetensors.IndexEntry) error {
	byName := make(map[string]*shard, len(ck.shards))
	for _, s := range ck.shards {
		byName[s.name] = s
	}
	mapped := 0
	for _, e := range index {
		s := byName[e.File]
		if s == nil { // the files are the index's: never, but not a panic
			return fmt.Errorf("%w: %s names %q, which was not opened", ErrCheckpoint, indexFile, e.File)
		}
		name, text := e.Name, true
		if ck.prefix != "" {
			name, text = strings.CutPrefix(name, ck.prefix)
		}
		if r := ck.tensors[name]; text && r != nil && r.full == e.Name {
			if r.shard != s {
				return fmt.Errorf("%w: %s: tensor %q is not mapped to this file by %s (maps to %q)", ErrCheckpoint, r.shard.name, r.full, indexFile, e.File)
			}
			if !r.indexed {
				r.indexed = true
				mapped++
			}
			continue
		}
		if _, ok := s.hdr.Lookup(e.Name); !ok {
			return fmt.Errorf("%w: %s: tensor %q listed in %s is not in the file", ErrCheckpoint, e.File, e.Name, indexFile)
		}
	}
	if mapped == len(ck.tensors) {
		return nil
	}
	for _, s := range ck.shards { // in file order, for the same error every time
		for _, t := range s.hdr.Tensors {
			name, _ := strings.CutPrefix(t.Name, ck.prefix)
			if r := ck.tensors[name]; r != nil && r.full == t.Name && !r.indexed {
				return fmt.Errorf("%w: %s: tensor %q is not mapped to this file by %s (maps to %q)", ErrCheckpoint, s.name, t.Name, indexFile, "")
			}
		}
	}
	return nil
}

// sources returns the shards' Sources by name.
func (ck *checkpoint) sources() map[string]ckpt.Source { return ck.ix.Sources() }

func (ck *checkpoint) missing(name string) error {
	return fmt.Errorf("%w: tensor %q is missing (in no shard)", ErrCheckpoint, ck.prefix+name)
}

func (ck *checkpoint) close() error {
	if ck.ix == nil {
		return nil
	}
	return ck.ix.Close()
}

// read returns the tensor's bytes exactly as stored.
func (ck *checkpoint) read(ctx context.Context, name string) ([]byte, *tensorRef, error) {
	r := ck.tensors[name]
	if r == nil {
		return nil, nil, ck.missing(name)
	}
	b := make([]byte, r.t.Size)
	if err := r.shard.src.ReadAt(ctx, b, r.t.Offset); err != nil {
		if ctx.Err() != nil {
			return nil, nil, err
		}
		return nil, nil, r.errorf("reading %d bytes at %d: %v", r.t.Size, r.t.Offset, err)
	}
	return b, r, nil
}

// matrixDType maps a float safetensors dtype to the kernels' dtype.
func matrixDType(dt string) (kernels.DType, bool) {
	switch dt {
	case "F32":
		return kernels.F32, true
	case "BF16":
		return kernels.BF16, true
	case "F16":
		return kernels.F16, true
	}
	return 0, false
}

// matrix loads a float tensor as a [shape[0], Π shape[1:]] kernels.Matrix
// viewing the stored bytes.
func (ck *checkpoint) matrix(ctx context.Context, name string) (kernels.Matrix, error) {
	b, r, err := ck.read(ctx, name)
	if err != nil {
		return kernels.Matrix{}, err
	}
	return r.matrix(b)
}

// matrix views b, the tensor's stored bytes, as a kernels.Matrix.
func (r *tensorRef) matrix(b []byte) (kernels.Matrix, error) {
	dt, ok := matrixDType(r.t.DType)
	if !ok {
		return kernels.Matrix{}, r.errorf("dtype %s is not a float type", r.t.DType)
	}
	rows, cols := 1, 1
	if len(r.t.Shape) > 0 {
		rows = int(r.t.Shape[0])
		cols = int(r.t.NumElements()) / max(rows, 1)
	}
	m := kernels.Matrix{DType: dt, Rows: rows, Cols: cols, Data: b}
	if err := m.Validate(); err != nil {
		return kernels.Matrix{}, r.errorf("%v", err)
	}
	return m, nil
}

// widen decodes every element of m exactly to fp32.
func widen(m kernels.Matrix) []float32 {
	v := make([]float32, m.Rows*m.Cols)
	for r := 0; r < m.Rows; r++ {
		kernels.DecodeRow(v[r*m.Cols:(r+1)*m.Cols], m, r)
	}
	return v
}
