package app

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrIdleUnknown is returned when the platform cannot say how long the user
// has been away.
var ErrIdleUnknown = errors.New("app: idle time unknown")

// NewIdleSource returns this platform's idle-time source: IOKit's
// HIDIdleTime on macOS, logind's IdleHint on Linux.
func NewIdleSource() IdleSource { return newIdleSource() }

// parseHIDIdleTime reads the first HIDIdleTime (nanoseconds since the last
// keyboard or mouse event) from `ioreg -c IOHIDSystem` output. It lives in
// the portable file so the parser is tested on Linux.
func parseHIDIdleTime(out []byte) (time.Duration, error) {
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		i := strings.Index(line, `"HIDIdleTime"`)
		if i < 0 {
			continue
		}
		_, val, ok := strings.Cut(line[i:], "=")
		if !ok {
			continue
		}
		ns, err := strconv.ParseUint(strings.TrimSpace(val), 10, 63)
		if err != nil {
			return 0, fmt.Errorf("%w: HIDIdleTime %q: %v", ErrIdleUnknown, strings.TrimSpace(val), err)
		}
		return time.Duration(ns), nil
	}
	return 0, fmt.Errorf("%w: no HIDIdleTime in ioreg output", ErrIdleUnknown)
}
