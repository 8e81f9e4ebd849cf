package checkpoint

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/deltafin/deltafin/checkpoint/safetensors"
)

// ExpertSpanBytes is the size of one Kimi K3 routed expert on disk: the six
// MXFP4 tensors w1/w2/w3 packed and scales, back to back (ExpertSpanSize of
// K3's 3072 × 3584).
const ExpertSpanBytes = 17_547_264

// MXFP4Group is the number of 4-bit weights that share one e8m0 scale byte.
const MXFP4Group = 32

// ErrExpertLayout reports routed-expert tensors that are not one contiguous
// U8 span each in the canonical order.
var ErrExpertLayout = errors.New("checkpoint: routed expert layout")

// ErrNoExperts reports a checkpoint with no MXFP4 routed experts (a dense
// or float-expert model): nothing to stream, replicate or probe.
var ErrNoExperts = errors.New("no MXFP4 routed experts")

// ErrNotFinite reports a weight that is NaN or infinite, which a published
// checkpoint never holds: the file is damaged.
var ErrNotFinite = errors.New("a weight is NaN or infinite")

// An ExpertID names one routed expert of one MoE layer (layer numbers are the
// checkpoint's decoder layer indices, 1..92 in K3).
type ExpertID struct{ Layer, Expert int }

func (id ExpertID) String() string { return fmt.Sprintf("layer %d expert %d", id.Layer, id.Expert) }

// Compare orders experts by layer, then expert.
func (id ExpertID) Compare(o ExpertID) int {
	return cmp.Or(cmp.Compare(id.Layer, o.Layer), cmp.Compare(id.Expert, o.Expert))
}

// An ExpertSpan is where one expert's bytes are: one contiguous range of one
// shard, so that an expert is one read (and, in stream mode, one HTTP range).
type ExpertSpan struct {
	Shard  string // file name inside the model directory
	Offset int64  // absolute offset of w1.weight_packed
	Size   int64  // through the end of w3.weight_scale
}

// End is the offset just past the span.
func (s ExpertSpan) End() int64 { return s.Offset + s.Size }

// ExpertSpanSize is the span of an MXFP4 expert with intermediate width inter
// and input width latent: three [inter, latent]-sized matrices of half a byte
// per weight plus a scale byte per MXFP4Group weights.
func ExpertSpanSize(inter, latent int) int64 {
	gate := int64(inter) * int64(latent)
	return 3 * (gate/2 + gate/MXFP4Group)
}

// IndexExperts finds the routed experts in one shard's header and checks that
// each expert's six tensors are U8 and byte-contiguous in the order w1p w1s
// w2p w2s w3p w3s, so the expert is one span. It does not check shapes: the
// caller knows the model's dimensions.
func IndexExperts(shard string, h *safetensors.Header) (map[ExpertID]ExpertSpan, error) {
	parts := map[ExpertID]*[6]safetensors.Tensor{}
	for _, t := range h.Tensors {
		id, part, ok := ParseExpertName(t.Name)
		if !ok {
			continue
		}
		if t.DType != "U8" {
			return nil, fmt.Errorf("%w: %s: tensor %q is %s, want U8", ErrExpertLayout, shard, t.Name, t.DType)
		}
		p := parts[id]
		if p == nil {
			p = new([6]safetensors.Tensor)
			parts[id] = p
		}
		p[part] = t
	}
	spans := make(map[ExpertID]ExpertSpan, len(parts))
	names := ExpertParts()
	// In (layer, expert) order, so that the error is the same every time.
	for _, id := range slices.SortedFunc(maps.Keys(parts), ExpertID.Compare) {
		p := parts[id]
		for i := range p {
			if p[i].Name == "" {
				return nil, fmt.Errorf("%w: %s: %s has no %s in this file (an expert's six tensors lie back to back in one file)",
					ErrExpertLayout, shard, id, names[i])
			}
			if i > 0 && p[i].Offset != p[i-1].End() {
				return nil, fmt.Errorf("%w: %s: tensor %q: %s is not contiguous: starts at byte %d, want %d (right after %q)",
					ErrExpertLayout, shard, p[i].Name, id, p[i].Offset, p[i-1].End(), p[i-1].Name)
			}
		}
		spans[id] = ExpertSpan{Shard: shard, Offset: p[0].Offset, Size: p[5].End() - p[0].Offset}
	}
	return spans, nil
}
