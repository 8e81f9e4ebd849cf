package app

import (
	"errors"
	"fmt"
	"strings"
)

// ErrPowerUnknown is returned when the power source cannot be read.
var ErrPowerUnknown = errors.New("app: power source unknown")

// NewPowerSource returns this platform's power source: pmset on macOS,
// /sys/class/power_supply on Linux.
func NewPowerSource() PowerSource { return newPowerSource() }

// parsePmset reads `pmset -g batt`, whose first line is "Now drawing from
// 'AC Power'" or "... 'Battery Power'". Portable so it is tested on Linux.
func parsePmset(out string) (bool, error) {
	first, _, _ := strings.Cut(out, "\n")
	switch {
	case strings.Contains(first, "'AC Power'"):
		return true, nil
	case strings.Contains(first, "'Battery Power'"), strings.Contains(first, "'UPS Power'"):
		return false, nil
	}
	return false, fmt.Errorf("%w: pmset says %q", ErrPowerUnknown, first)
}
