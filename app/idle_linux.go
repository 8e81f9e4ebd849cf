package app

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/godbus/dbus/v5"
)

// logindIdle asks systemd-logind for the session's IdleHint and
// IdleSinceHint, which desktop sessions (GNOME, KDE, ...) keep up to date.
type logindIdle struct {
	mu   sync.Mutex
	conn *dbus.Conn                 // nil until first use
	dial func() (*dbus.Conn, error) // the system bus; a private bus in tests
	now  func() time.Time
}

func newIdleSource() IdleSource {
	return &logindIdle{dial: dbus.SystemBus, now: time.Now}
}

const (
	logindName    = "org.freedesktop.login1"
	logindSession = dbus.ObjectPath("/org/freedesktop/login1/session/auto")
	logindIface   = "org.freedesktop.login1.Session"
)

func (l *logindIdle) IdleTime(ctx context.Context) (time.Duration, error) {
	l.mu.Lock()
	if l.conn == nil {
		c, err := l.dial()
		if err != nil {
			l.mu.Unlock()
			return 0, fmt.Errorf("%w: system bus: %v", ErrIdleUnknown, err)
		}
		l.conn = c
	}
	conn := l.conn
	l.mu.Unlock()
	obj := conn.Object(logindName, logindSession)
	get := func(name string) (dbus.Variant, error) {
		var v dbus.Variant
		err := obj.CallWithContext(ctx, "org.freedesktop.DBus.Properties.Get", 0, logindIface, name).Store(&v)
		if err != nil {
			return v, fmt.Errorf("%w: logind %s: %v", ErrIdleUnknown, name, err)
		}
		return v, nil
	}
	v, err := get("IdleHint")
	if err != nil {
		return 0, err
	}
	hint, ok := v.Value().(bool)
	if !ok {
		return 0, fmt.Errorf("%w: logind IdleHint is %s, not a boolean", ErrIdleUnknown, v.Signature())
	}
	if !hint {
		return 0, nil
	}
	if v, err = get("IdleSinceHint"); err != nil {
		return 0, err
	}
	since, ok := v.Value().(uint64) // µs since the epoch (CLOCK_REALTIME)
	if !ok {
		return 0, fmt.Errorf("%w: logind IdleSinceHint is %s, not uint64", ErrIdleUnknown, v.Signature())
	}
	if since == 0 {
		return 0, fmt.Errorf("%w: logind says idle but not since when", ErrIdleUnknown)
	}
	return max(0, l.now().Sub(time.UnixMicro(int64(since)))), nil
}
