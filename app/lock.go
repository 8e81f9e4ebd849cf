package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/deltafin/deltafin/internal/flock"
)

// ErrRunning is LockDataDir's error when another Deltafin (the app or
// deltafin serve) already uses the data directory.
var ErrRunning = errors.New("app: Deltafin is already running")

// lockName is the instance lock in the data directory.
const lockName = "deltafin.lock"

// Lock is the data directory's instance lock: one app or server per data
// directory, so two processes never download into, warm or serve the same
// mirror. It is an flock on DataDir/deltafin.lock, which the kernel
// releases when the process ends however it ends, so a lock left by a crash
// is taken over by the next start. The file also says who holds it (pid and
// API address), for the second instance's message.
type Lock struct {
	f     *os.File
	owner lockOwner
}

type lockOwner struct {
	PID int    `json:"pid"`
	URL string `json:"url,omitempty"`
}

// LockDataDir takes dir's instance lock, or returns an error wrapping
// ErrRunning that names the holder: "Deltafin is already running (pid N,
// http://…)".
func LockDataDir(dir string) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("app: data directory: %w", err)
	}
	path := filepath.Join(dir, lockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("app: instance lock: %w", err)
	}
	if err := flock.Try(f); err != nil {
		defer f.Close()
		if !errors.Is(err, flock.ErrHeld) {
			return nil, fmt.Errorf("app: instance lock %s: %w", path, err)
		}
		var o lockOwner
		b, _ := os.ReadFile(path) // best effort: the holder may be writing it
		_ = json.Unmarshal(b, &o)
		who := []string{}
		if o.PID > 0 {
			who = append(who, fmt.Sprintf("pid %d", o.PID))
		}
		if o.URL != "" {
			who = append(who, o.URL)
		}
		if len(who) == 0 {
			return nil, fmt.Errorf("%w (data directory %s)", ErrRunning, dir)
		}
		return nil, fmt.Errorf("%w (%s)", ErrRunning, strings.Join(who, ", "))
	}
	l := &Lock{f: f, owner: lockOwner{PID: os.Getpid()}}
	if err := l.write(); err != nil {
		return nil, errors.Join(err, f.Close())
	}
	return l, nil
}

// SetURL records the API's address in the lock, for a second instance to
// point at.
func (l *Lock) SetURL(url string) error {
	l.owner.URL = url
	return l.write()
}

func (l *Lock) write() error {
	b, err := json.Marshal(l.owner)
	if err != nil {
		return err
	}
	if err := l.f.Truncate(0); err != nil {
		return fmt.Errorf("app: instance lock: %w", err)
	}
	if _, err := l.f.WriteAt(append(b, '\n'), 0); err != nil {
		return fmt.Errorf("app: instance lock: %w", err)
	}
	return nil
}

// Close releases the lock. The file stays: removing it would let a third
// process lock a new file while a second still waits on the old one.
func (l *Lock) Close() error { return l.f.Close() }
