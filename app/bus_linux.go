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
// without one systray logs and waits forever, and its Quit panics. A bus
// without a StatusNotifierWatcher (GNOME without the AppIndicator
// extension) is not an error, since a tray host may start later, but the
// warning says why no icon shows.
func checkDesktop(ctx context.Context, cfg Config) (warning string, err error) {
	addr := cfg.SessionBus
	if addr == "" && cfg.RuntimeDir != "" {
		sock := filepath.Join(cfg.RuntimeDir, "bus")
		if st, err := os.Stat(sock); err == nil && st.Mode()&os.ModeSocket != 0 {
			addr = "unix:path=" + sock
		}
	}
	if addr == "" {
		return "", fmt.Errorf("%w: DBUS_SESSION_BUS_ADDRESS is unset and $XDG_RUNTIME_DIR/bus is missing; "+
			"the menu bar needs a desktop session (use `deltafin serve` on a headless machine)", ErrNoTray)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := dbus.Connect(addr, dbus.WithContext(ctx))
	if err != nil {
		return "", fmt.Errorf("%w: session bus %s: %v", ErrNoTray, addr, err)
	}
	defer conn.Close()
	var has bool
	err = conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.NameHasOwner", 0, sniWatcher).Store(&has)
	if err != nil {
		return "", fmt.Errorf("%w: session bus %s: %v", ErrNoTray, addr, err)
	}
	if !has {
		warning = "no StatusNotifierWatcher on the session bus: the icon shows once a tray host runs " +
			"(on GNOME, the AppIndicator extension)"
	}
	return warning, nil
}

const sniWatcher = "org.kde.StatusNotifierWatcher"

func desktopReady(cfg Config) string {
	return "session bus " + cfg.SessionBus + " with a StatusNotifierItem host: the menu shows"
}
