//go:build !linux && !darwin

package app

import (
	"context"
	"fmt"
	"runtime"
	"time"
)

type noIdle struct{}

func newIdleSource() IdleSource { return noIdle{} }

func (noIdle) IdleTime(context.Context) (time.Duration, error) {
	return 0, fmt.Errorf("%w on %s", ErrIdleUnknown, runtime.GOOS)
}
