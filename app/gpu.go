package app

import (
	// The GPU kernels backends register themselves with kernels: "vulkan"
	// on Linux with cgo, "metal" on macOS with cgo (each a stub returning
	// ErrUnsupported elsewhere). DELTAFIN_KERNELS=vulkan|metal selects one;
	// "gpu" takes the first that opens and falls back to the CPU kernels.
	_ "github.com/deltafin/deltafin/kernels/metal"
	_ "github.com/deltafin/deltafin/kernels/vulkan"
)
