package app

import (
	"context"
	"fmt"
	"os/exec"
	"time"
)

// ioregIdle reads IOKit's HIDIdleTime through ioreg, which needs no cgo.
// Runs only on a Mac; the parser is tested on Linux.
type ioregIdle struct{}

func newIdleSource() IdleSource { return ioregIdle{} }

func (ioregIdle) IdleTime(ctx context.Context) (time.Duration, error) {
	out, err := exec.CommandContext(ctx, "/usr/sbin/ioreg", "-c", "IOHIDSystem", "-d", "4").Output()
	if err != nil {
		return 0, fmt.Errorf("%w: ioreg: %v", ErrIdleUnknown, err)
	}
	return parseHIDIdleTime(out)
}
