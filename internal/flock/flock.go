package flock

import (
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// ErrHeld reports a lock another open file holds.
var ErrHeld = errors.New("flock: held by another process")

// Try takes an exclusive flock on f without blocking, or returns ErrHeld.
//
// A lock this process has just released can stay held for a moment: a
// child forked by another goroutine shares the lock's open file until its
// exec closes it. Another process's lock does not go away in that time, so
// a short bounded retry (about a quarter of a second) tells the two apart.
func Try(f *os.File) error {
	err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	for wait := time.Millisecond; errors.Is(err, unix.EWOULDBLOCK) && wait <= 128*time.Millisecond; wait *= 2 {
		time.Sleep(wait)
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	}
	if errors.Is(err, unix.EWOULDBLOCK) {
		return ErrHeld
	}
	return err
}
