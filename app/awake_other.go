//go:build !linux && !darwin

package app

import (
	"fmt"
	"os/exec"
	"runtime"
)

func keepAwakeArgv(string, int) ([]string, error) {
	return nil, fmt.Errorf("%w on %s", ErrNoKeepAwake, runtime.GOOS)
}

func setDeathSignal(*exec.Cmd) {}
