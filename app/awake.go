package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
)

// ErrNoKeepAwake is returned when this machine has no way to hold off
// sleep (no caffeinate, no systemd-inhibit).
var ErrNoKeepAwake = errors.New("app: cannot keep the machine awake")

// NewKeepAwake returns this platform's keep-awake: a `caffeinate -i -w PID`
// child on macOS, a `systemd-inhibit` child on Linux. Both children also
// end by themselves when this process dies, so a crash never leaves the
// machine unable to sleep.
func NewKeepAwake() KeepAwake {
	return func(ctx context.Context, reason string) (func(), error) {
		argv, err := keepAwakeArgv(reason, os.Getpid())
		if err != nil {
			return nil, err
		}
		return holdProcess(ctx, argv)
	}
}

// holdProcess starts argv and returns a release that stops it and reaps it.
// The child holds the power assertion for as long as it runs.
func holdProcess(ctx context.Context, argv []string) (func(), error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoKeepAwake, err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cmd.Process.Kill()
			<-done
		})
	}, nil
}
