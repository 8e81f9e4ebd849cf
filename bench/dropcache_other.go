//go:build !linux

package bench

import (
	"os"
)

// dropRange has no portable equivalent outside Linux; the engine's direct
// reads bypass the page cache there anyway (F_NOCACHE on macOS).
func dropRange(*os.File, int64, int64) {}
