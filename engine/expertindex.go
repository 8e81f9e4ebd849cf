package engine

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/deltafin/deltafin/engine/safetensors"
	"github.com/deltafin/deltafin/kernels"
)

// ExpertSpanBytes is the size of one Kimi K3 routed expert on disk: the six
// MXFP4 tensors w1/w2/w3 packed and scales, back to back
// (K3-ARCHITECTURE.md §3.3).
const ExpertSpanBytes = 17_547_264

// ErrExpertLayout reports routed-expert tensors that are not one contiguous
// span each in the canonical order.
var ErrExpertLayout = errors.New("engine: routed expert layout")

// An ExpertID names one routed expert of one MoE layer (layer numbers are the
// checkpoint's, 1..92 in K3).
type ExpertID struct{ Layer, Expert int }

func (id ExpertID) String() string { return fmt.Sprintf("layer %d expert %d", id.Layer, id.Expert) }

// An ExpertSpan is where one expert's bytes are: one contiguous range of one
// shard, so that an expert is one read (and, in stream mode, one HTTP range).
type ExpertSpan struct {
	Shard  string // file name inside the model directory
	Offset int64  // absolute offset of w1.weight_packed
	Size   int64  // through the end of w3.weight_scale
}

// expertParts is the on-disk order of one expert's tensors.
var expertParts = [6]string{
	"w1.weight_packed", "w1.weight_scale",
	"w2.weight_packed", "w2.weight_scale",
	"w3.weight_packed", "w3.weight_scale",
}

const (
	k3TextPrefix   = "language_model."
	layersPrefix   = "model.layers."
	expertsInfix   = ".block_sparse_moe.experts."
	expertTensorU8 = "U8"
)

// IndexExperts finds the routed experts in one shard's header and checks that
// each expert's six tensors are U8 and byte-contiguous in the order w1p w1s
// w2p w2s w3p w3s, so the expert is one span. It does not check shapes: the
// caller knows the model's dimensions (ExpertMatrices checks them).
func IndexExperts(shard string, h *safetensors.Header) (map[ExpertID]ExpertSpan, error) {
	parts := map[ExpertID]*[6]safetensors.Tensor{}
	for _, t := range h.Tensors {
		id, part, ok := parseExpertName(t.Name)
		if !ok {
			continue
		}
		if t.DType != expertTensorU8 {
			return nil, fmt.Errorf("%w: %s in %s is %s, want U8", ErrExpertLayout, t.Name, shard, t.DType)
		}
		p := parts[id]
		if p == nil {
			p = new([6]safetensors.Tensor)
			parts[id] = p
		}
		p[part] = t
	}
	spans := make(map[ExpertID]ExpertSpan, len(parts))
	for id, p := range parts {
		for i := range p {
			if p[i].Name == "" {
				return nil, fmt.Errorf("%w: %s in %s has no %s", ErrExpertLayout, id, shard, expertParts[i])
			}
			if i > 0 && p[i].Offset != p[i-1].End() {
				return nil, fmt.Errorf("%w: %s in %s: %s starts at %d, not where %s ends (%d)",
					ErrExpertLayout, id, shard, expertParts[i], p[i].Offset, expertParts[i-1], p[i-1].End())
			}
		}
		spans[id] = ExpertSpan{Shard: shard, Offset: p[0].Offset, Size: p[5].End() - p[0].Offset}
	}
	return spans, nil
}

// parseExpertName splits "[language_model.]model.layers.L.block_sparse_moe.experts.E.PART".
func parseExpertName(name string) (ExpertID, int, bool) {
	rest, ok := strings.CutPrefix(strings.TrimPrefix(name, k3TextPrefix), layersPrefix)
	if !ok {
		return ExpertID{}, 0, false
	}
	layer, rest, ok := strings.Cut(rest, expertsInfix)
	if !ok {
		return ExpertID{}, 0, false
	}
	expert, part, ok := strings.Cut(rest, ".")
	if !ok {
		return ExpertID{}, 0, false
	}
	l, err1 := strconv.Atoi(layer)
	e, err2 := strconv.Atoi(expert)
	if err1 != nil || err2 != nil || l < 0 || e < 0 {
		return ExpertID{}, 0, false
	}
	for i, p := range expertParts {
		if p == part {
			return ExpertID{l, e}, i, true
		}
	}
	return ExpertID{}, 0, false
}

// ExpertName returns the checkpoint name of one of an expert's tensors
// (part 0..5 in on-disk order).
func ExpertName(id ExpertID, part int) string {
	return k3TextPrefix + layersPrefix + strconv.Itoa(id.Layer) + expertsInfix + strconv.Itoa(id.Expert) + "." + expertParts[part]
}

// ExpertSpanSize is the span of an expert with intermediate width inter and
// latent width latent (K3: 3072 and 3584 give ExpertSpanBytes).
func ExpertSpanSize(inter, latent int) int64 {
	gate := int64(inter) * int64(latent)
	return 3 * (gate/2 + gate/kernels.MXFP4GroupSize)
}

// ExpertMatrices views an expert span as the kernels' gate (W1, [inter,
// latent]), down (W2, [latent, inter]) and up (W3) MXFP4 matrices, without a
// copy.
func ExpertMatrices(b []byte, inter, latent int) (kernels.Expert, error) {
	if int64(len(b)) != ExpertSpanSize(inter, latent) {
		return kernels.Expert{}, fmt.Errorf("%w: span of %d bytes, want %d for [%d,%d]",
			ErrExpertLayout, len(b), ExpertSpanSize(inter, latent), inter, latent)
	}
	n := inter * latent
	packed, scales := n/2, n/kernels.MXFP4GroupSize
	m := func(i, rows, cols int) kernels.Matrix {
		off := i * (packed + scales)
		return kernels.Matrix{DType: kernels.MXFP4, Rows: rows, Cols: cols,
			Data: b[off : off+packed : off+packed], Scales: b[off+packed : off+packed+scales : off+packed+scales]}
	}
	return kernels.Expert{W1: m(0, inter, latent), W2: m(1, latent, inter), W3: m(2, inter, latent)}, nil
}

// sortedExpertIDs returns the keys of spans in (layer, expert) order.
func sortedExpertIDs(spans map[ExpertID]ExpertSpan) []ExpertID {
	ids := make([]ExpertID, 0, len(spans))
	for id := range spans {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		if ids[i].Layer != ids[j].Layer {
			return ids[i].Layer < ids[j].Layer
		}
		return ids[i].Expert < ids[j].Expert
	})
	return ids
}
