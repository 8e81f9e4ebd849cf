//go:build !linux && !darwin

package app

import (
	"fmt"
	"runtime"
)

func keepAwakeArgv(string, int) ([]string, error) {
	return nil, fmt.Errorf("%w on %s", ErrNoKeepAwake, runtime.GOOS)
}
