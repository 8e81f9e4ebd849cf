//go:build !linux && !darwin

package app

import (
	"context"
	"fmt"
	"runtime"
)

type noPower struct{}

func newPowerSource() PowerSource { return noPower{} }

func (noPower) OnAC(context.Context) (bool, error) {
	return false, fmt.Errorf("%w on %s", ErrPowerUnknown, runtime.GOOS)
}
