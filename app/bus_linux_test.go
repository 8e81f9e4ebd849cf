package app

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/godbus/dbus/v5/prop"
	"github.com/stretchr/testify/require"
)

// The app's tests run against a private DBus session bus that TestMain
// starts (dbus-daemon, so `go test ./...` needs no wrapper), with the
// desktop's side of the conversation written here: a StatusNotifierWatcher
// (the tray host), an org.freedesktop.Notifications server, and a logind
// session whose idle hint the tests set.

// trayChildEnv switches the test binary into the menu-bar app for the
// DBus end-to-end test: systray runs once per process, on main's thread.
const trayChildEnv = "DELTAFIN_TEST_TRAY_CHILD"

// desk is the test process's side of the private session bus.
var desk *desktopFakes

func TestMain(m *testing.M) {
	if os.Getenv(trayChildEnv) != "" {
		os.Exit(trayChild())
	}
	stop, err := startSessionBus()
	if err != nil {
		fmt.Fprintln(os.Stderr, "app tests:", err)
		os.Exit(1)
	}
	code := m.Run()
	stop()
	os.Exit(code)
}

// startSessionBus runs a private dbus-daemon, points this process (and the
// tray child) at it and exports the desktop fakes.
func startSessionBus() (stop func(), err error) {
	stop, addr, err := runDBusDaemon()
	if err != nil {
		return nil, err
	}
	os.Setenv("DBUS_SESSION_BUS_ADDRESS", addr)
	desk, err = newDesktopFakes(addr)
	if err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}

// startBareBus runs another private bus with nothing on it.
func startBareBus(t *testing.T) (stop func(), addr string) {
	stop, addr, err := runDBusDaemon()
	require.NoError(t, err)
	return stop, addr
}

// runDBusDaemon starts dbus-daemon on a socket in a new temporary
// directory and returns its address.
func runDBusDaemon() (stop func(), addr string, err error) {
	dir, err := os.MkdirTemp("", "deltafin-bus-")
	if err != nil {
		return nil, "", err
	}
	cmd := exec.Command("dbus-daemon", "--session", "--nofork", "--print-address=1",
		"--address=unix:path="+filepath.Join(dir, "bus"))
	// The bus dies with the tests, even when a timeout kills them.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, "", fmt.Errorf("start dbus-daemon (Debian package dbus-daemon; `make deps` installs it): %w", err)
	}
	stop = func() {
		cmd.Process.Kill()
		cmd.Wait()
		os.RemoveAll(dir)
	}
	addr, err = bufio.NewReader(out).ReadString('\n')
	if err != nil {
		stop()
		return nil, "", fmt.Errorf("dbus-daemon printed no address: %w", err)
	}
	return stop, strings.TrimSpace(addr), nil
}

type notification struct{ App, Summary, Body string }

// desktopFakes owns the well-known names a desktop session provides.
type desktopFakes struct {
	addr   string
	conn   *dbus.Conn
	notes  chan notification
	logind *prop.Properties

	mu   sync.Mutex
	item string // unique name of the registered StatusNotifierItem
}

func newDesktopFakes(addr string) (*desktopFakes, error) {
	conn, err := dbus.Connect(addr)
	if err != nil {
		return nil, err
	}
	d := &desktopFakes{addr: addr, conn: conn, notes: make(chan notification, 64)}
	export := func(v any, path dbus.ObjectPath, iface, name string) error {
		if err := conn.Export(v, path, iface); err != nil {
			return err
		}
		reply, err := conn.RequestName(name, dbus.NameFlagDoNotQueue)
		if err != nil {
			return err
		}
		if reply != dbus.RequestNameReplyPrimaryOwner {
			return fmt.Errorf("name %s taken", name)
		}
		return nil
	}
	if err := export(watcher{d}, "/StatusNotifierWatcher", "org.kde.StatusNotifierWatcher", "org.kde.StatusNotifierWatcher"); err != nil {
		return nil, err
	}
	if err := export(notifications{d}, "/org/freedesktop/Notifications", "org.freedesktop.Notifications", "org.freedesktop.Notifications"); err != nil {
		return nil, err
	}
	d.logind, err = prop.Export(conn, logindSession, map[string]map[string]*prop.Prop{logindIface: {
		"IdleHint":      {Value: false, Emit: prop.EmitTrue},
		"IdleSinceHint": {Value: uint64(0), Emit: prop.EmitTrue},
	}})
	if err != nil {
		return nil, err
	}
	if _, err := conn.RequestName(logindName, dbus.NameFlagDoNotQueue); err != nil {
		return nil, err
	}
	return d, nil
}

// watcher is org.kde.StatusNotifierWatcher, the tray host's registry.
type watcher struct{ d *desktopFakes }

func (w watcher) RegisterStatusNotifierItem(sender dbus.Sender, service string) *dbus.Error {
	w.d.mu.Lock()
	w.d.item = string(sender)
	w.d.mu.Unlock()
	return nil
}

func (d *desktopFakes) registered() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.item
}

// notifications is org.freedesktop.Notifications as beeep calls it.
type notifications struct{ d *desktopFakes }

func (n notifications) Notify(app string, replaces uint32, icon, summary, body string, actions []string,
	hints map[string]dbus.Variant, timeout int32) (uint32, *dbus.Error) {
	select {
	case n.d.notes <- notification{app, summary, body}:
	default:
	}
	return 1, nil
}

func (notifications) GetCapabilities() ([]string, *dbus.Error) { return []string{"body"}, nil }

func (notifications) GetServerInformation() (string, string, string, string, *dbus.Error) {
	return "deltafin-test", "deltafin", "1", "1.2", nil
}

func (notifications) CloseNotification(uint32) *dbus.Error { return nil }

// setIdle makes the fake logind session idle since d ago (or active).
func (d *desktopFakes) setIdle(idle bool, since time.Duration) {
	d.logind.SetMust(logindIface, "IdleHint", idle)
	us := uint64(0)
	if idle {
		us = uint64(time.Now().Add(-since).UnixMicro())
	}
	d.logind.SetMust(logindIface, "IdleSinceHint", us)
}

// reset forgets the registered item and the notifications of earlier
// tests, and makes the session active.
func (d *desktopFakes) reset() {
	d.mu.Lock()
	d.item = ""
	d.mu.Unlock()
	d.setIdle(false, 0)
	d.drain()
}

func (d *desktopFakes) drain() {
	for {
		select {
		case <-d.notes:
		default:
			return
		}
	}
}

// waitNotification returns the first notification whose summary starts
// with prefix, skipping others.
func (d *desktopFakes) waitNotification(t *testing.T, prefix string) notification {
	t.Helper()
	deadline := time.After(20 * time.Second)
	var seen []string
	for {
		select {
		case n := <-d.notes:
			if strings.HasPrefix(n.Summary, prefix) {
				return n
			}
			seen = append(seen, n.Summary+": "+n.Body)
		case <-deadline:
			require.FailNow(t, "no notification "+prefix, "saw %q", seen)
		}
	}
}

// privateBus dials the test bus as a new connection (the logind twin's
// dial in tests).
func privateBus() (*dbus.Conn, error) { return dbus.Connect(desk.addr) }
