package app

import (
	"context"
	"fmt"
	"os/exec"
)

// pmsetPower asks `pmset -g batt`. Runs only on a Mac; the parser is tested
// on Linux.
type pmsetPower struct{}

func newPowerSource() PowerSource { return pmsetPower{} }

func (pmsetPower) OnAC(ctx context.Context) (bool, error) {
	out, err := exec.CommandContext(ctx, "/usr/bin/pmset", "-g", "batt").Output()
	if err != nil {
		return false, fmt.Errorf("%w: pmset: %v", ErrPowerUnknown, err)
	}
	return parsePmset(string(out))
}
