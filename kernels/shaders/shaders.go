package shaders

import (
	"embed"
	"errors"
	"fmt"
)

//go:embed *.spv *.metal
var files embed.FS

// ErrUnknown reports a shader name this package does not hold.
var ErrUnknown = errors.New("shaders: unknown shader")

// The compute kernels. Each name has NAME.comp, NAME.spv and NAME.metal.
const (
	MatMul = "matmul" // y = W·x over any kernels.DType, n positions (matvec, prefill, expert FFN)
	Act    = "act"    // the expert FFN's gated activation, in place
	MMTile = "mmtile" // y = W·x for n ≥ 2 positions in 64×32 tiles (prefill)
	Attn   = "attn"   // causal softmax attention in tiles, online softmax (MLA prefill)
	MMBig  = "mmbig"  // y = W·x for many positions in 128×64 tiles, 8×8 a thread (only when asked: gpu.Backend.SetBigTileMinGroups)
	FMA    = "fma"    // the device's fp32 multiply-add peak
	// MMGroup is mmtile's tiles over a group of experts, each over its own
	// positions, in one dispatch (a prompt's experts on the GPU).
	MMGroup = "mmgroup"
	// MLAKV writes a latent attention's new keys and values from kv_b's
	// outputs (kernels.LatentAttn.FillKV, on the device).
	MLAKV = "mlakv"
)

// Names lists every shader, in a fixed order (backends index pipelines by
// it); each call returns a new slice.
func Names() []string { return []string{MatMul, Act, MMTile, Attn, MMBig, FMA, MMGroup, MLAKV} }

// Bindings is how many storage buffers a shader binds (SPIR-V bindings
// 1..n), 0 for a name this package does not hold.
func Bindings(name string) int {
	switch name {
	case MatMul, MMTile, MMBig:
		return 4 // weights, scales, x, y
	case MMGroup:
		return 5 // weights, scales, x, y, the experts' table
	case FMA:
		return 1 // the lanes' sums
	case Attn:
		return 4 // q, k, v, dst
	case MLAKV:
		return 4 // kv, kpe, k, v
	case Act:
		return 2 // g, u
	}
	return 0
}

// LocalSize is the workgroup width (local_size_x) of every shader but
// mmtile, mmbig and attn (LocalSizeOf).
const LocalSize = 64

// MMTileLocalSize is mmtile's workgroup width, MMBigLocalSize mmbig's,
// AttnLocalSize attn's.
const (
	MMTileLocalSize = 128
	MMBigLocalSize  = 128
	AttnLocalSize   = 256
)

// LocalSizeOf is a shader's workgroup width (local_size_x), which Metal
// must be told at each dispatch (Vulkan reads it from the SPIR-V).
func LocalSizeOf(name string) int {
	switch name {
	case MMTile, MMGroup:
		return MMTileLocalSize
	case MMBig:
		return MMBigLocalSize
	case Attn:
		return AttnLocalSize
	}
	return LocalSize
}

// SPIRV returns the SPIR-V words of a shader as bytes.
func SPIRV(name string) ([]byte, error) {
	b, err := files.ReadFile(name + ".spv")
	if err != nil {
		return nil, fmt.Errorf("%w %q", ErrUnknown, name)
	}
	if len(b) < 20 || len(b)%4 != 0 || b[0] != 0x03 || b[1] != 0x02 || b[2] != 0x23 || b[3] != 0x07 {
		return nil, fmt.Errorf("%w %q: not little-endian SPIR-V", ErrUnknown, name)
	}
	return b, nil
}

// MSL returns the Metal Shading Language source of a shader (entry point main0).
func MSL(name string) (string, error) {
	b, err := files.ReadFile(name + ".metal")
	if err != nil {
		return "", fmt.Errorf("%w %q", ErrUnknown, name)
	}
	return string(b), nil
}
