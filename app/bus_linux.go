package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/godbus/dbus/v5"
)

// checkDesktop makes sure a session bus answers before the tray starts:
// without one systray logs and waits forever, and its Quit panics.
func checkDesktop(ctx context.Context, cfg Config) error {
	addr := cfg.SessionBus
	if addr == "" && cfg.RuntimeDir != "" {
		sock := filepath.Join(cfg.RuntimeDir, "bus")
		if st, err := os.Stat(sock); err == nil && st.Mode()&os.ModeSocket != 0 {
			addr = "unix:path=" + sock
		}
	}
	if addr == "" {
		return fmt.Errorf("%w: DBUS_SESSION_BUS_ADDRESS is unset and $XDG_RUNTIME_DIR/bus is missing; "+
			"the menu bar needs a desktop session (use `deltafin serve` on a headless machine)", ErrNoTray)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := dbus.Connect(addr, dbus.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("%w: session bus %s: %v", ErrNoTray, addr, err)
	}
	return conn.Close()
}
