//go:build !linux && !(darwin && cgo)

package app

import (
	"context"
	"fmt"
	"runtime"
)

// runTray: the macOS menu bar links Cocoa through cgo, so a CGO_ENABLED=0
// darwin build (the darwin vet in make test) has no tray.
func runTray(context.Context, *App, []byte, []byte) error {
	return fmt.Errorf("%w: this %s build has no menu bar (macOS needs cgo)", ErrNoTray, runtime.GOOS)
}
