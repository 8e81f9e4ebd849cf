package checkpoint

import (
	"strconv"
	"strings"
)

// TextPrefix is where Moonshot's multimodal wrapper puts the text model's
// tensors. Kimi-Linear checkpoints have no prefix.
const TextPrefix = "language_model."

const (
	layersPrefix = "model.layers."
	expertsInfix = "block_sparse_moe.experts."
)

// ExpertParts returns the suffixes of one MXFP4 routed expert's tensors, in
// the byte order they lie on disk: w1 (gate) packed and scales, w2 (down),
// w3 (up). (A function, so that nobody can change the table.)
func ExpertParts() [6]string {
	return [6]string{
		"w1.weight_packed", "w1.weight_scale",
		"w2.weight_packed", "w2.weight_scale",
		"w3.weight_packed", "w3.weight_scale",
	}
}

// FloatExpertParts returns the tensors of a float routed expert
// (Kimi-Linear's Hugging Face layout), which need not be contiguous.
func FloatExpertParts() [3]string { return [3]string{"w1.weight", "w2.weight", "w3.weight"} }

// LayerPrefix is the name prefix of decoder layer i's tensors (unprefixed:
// TextPrefix stripped).
func LayerPrefix(i int) string { return layersPrefix + strconv.Itoa(i) + "." }

// ExpertPrefix is the name prefix of routed expert e of layer l.
func ExpertPrefix(layer, e int) string {
	return LayerPrefix(layer) + expertsInfix + strconv.Itoa(e) + "."
}

// ExpertName returns the name in the file of one of an MXFP4 expert's
// tensors (part 0..5, ExpertParts order), with TextPrefix as K3 stores it.
func ExpertName(id ExpertID, part int) string {
	return TextPrefix + ExpertPrefix(id.Layer, id.Expert) + ExpertParts()[part]
}

// LayerOf returns the decoder layer an unprefixed tensor name belongs to
// ("model.layers.N.…" with 0 <= N < layers), or false for a name outside
// the layers.
func LayerOf(name string, layers int) (int, bool) {
	rest, ok := strings.CutPrefix(name, layersPrefix)
	if !ok {
		return 0, false
	}
	n, _, ok := strings.Cut(rest, ".")
	if !ok {
		return 0, false
	}
	i, ok := index(n)
	if !ok || i >= layers {
		return 0, false
	}
	return i, true
}

// IsExpertTensor reports whether an unprefixed name is a routed expert's
// tensor, MXFP4 or float (not a shared expert's: those are spine).
func IsExpertTensor(name string) bool {
	rest, ok := strings.CutPrefix(name, layersPrefix)
	if !ok {
		return false
	}
	_, rest, ok = strings.Cut(rest, ".")
	return ok && strings.HasPrefix(rest, expertsInfix)
}

// ParseExpertName splits "[language_model.]model.layers.L.block_sparse_moe.experts.E.PART"
// into the expert and the index of PART in ExpertParts; false for any other
// name, float expert tensors included.
func ParseExpertName(name string) (ExpertID, int, bool) {
	rest, ok := strings.CutPrefix(strings.TrimPrefix(name, TextPrefix), layersPrefix)
	if !ok {
		return ExpertID{}, 0, false
	}
	layer, rest, ok := strings.Cut(rest, "."+expertsInfix)
	if !ok {
		return ExpertID{}, 0, false
	}
	expert, part, ok := strings.Cut(rest, ".")
	if !ok {
		return ExpertID{}, 0, false
	}
	l, ok1 := index(layer)
	e, ok2 := index(expert)
	if !ok1 || !ok2 {
		return ExpertID{}, 0, false
	}
	for i, p := range ExpertParts() {
		if p == part {
			return ExpertID{l, e}, i, true
		}
	}
	return ExpertID{}, 0, false
}

// index parses a non-negative decimal index as names write it: digits only
// (no sign, no spaces), so that a name has one spelling.
func index(s string) (int, bool) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, false
	}
	i, err := strconv.Atoi(s)
	return i, err == nil
}
