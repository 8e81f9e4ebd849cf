package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/stretchr/testify/require"
)

// trayChild is the menu-bar app as the tray test runs it: the real App,
// systray and beeep on the test bus, the real downloader and warmer against
// the fake hub, the real API server (demo model, then the installed one),
// and the logind and sysfs twins.
func trayChild() int {
	dir := os.Getenv("DELTAFIN_TEST_DIR")
	cfg := DefaultConfig(os.Getenv)
	cfg.DataDir = filepath.Join(dir, "data")
	cfg.WarmPoll, cfg.WarmIdleAfter, cfg.Jobs, cfg.Server.Port = 100*time.Millisecond, time.Minute, 1, 0
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	// The real downloader and warmer, against the parent's fake hub
	// (HF_ENDPOINT, HF_TOKEN), in small chunks so progress shows.
	mi := newMirrorInstall(cfg)
	mi.headroom, mi.chunkSize = 1, 16<<10
	deps := Deps{
		Downloader: mi,
		Warmer:     mi,
		Server:     &apiServer{cfg: cfg, mi: mi, demo: os.DirFS("../testdata/k3-tiny"), log: log},
		Notifier:   NewNotifier(),
		Idle: &logindIdle{now: time.Now, dial: func() (*dbus.Conn, error) {
			return dbus.Connect(cfg.SessionBus)
		}},
		Power: sysfsPower{root: filepath.Join(dir, "power")},
		Login: NewLoginItem("/opt/Deltafin Test/deltafin", dir, filepath.Join(dir, "config")),
		Desktop: cmdDesktop{
			copy: [][]string{{"sh", "-c", `cat > "$0"`, filepath.Join(dir, "clipboard")}},
			open: [][]string{{"sh", "-c", `echo "$1" > "$0"`, filepath.Join(dir, "opened")}},
			// DELTAFIN_TEST_CONFIRM=yes: a dialog tool that says Download.
			confirm: map[bool][][]string{true: {{"sh", "-c", "exit 0"}}}[os.Getenv("DELTAFIN_TEST_CONFIRM") == "yes"],
		},
		KeepAwake: NewKeepAwake(),
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := RunMenuBar(ctx, cfg, deps, log, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "tray child:", err)
		return 1
	}
	return 0
}

// lockedBuffer collects the child's output.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// entry is one menu item as com.canonical.dbusmenu shows it.
type entry struct {
	ID      int32
	Label   string
	Enabled bool
	Visible bool
	Toggle  int32
}

// dbusMenu reads and clicks the app's menu the way a tray host does.
type dbusMenu struct {
	t    *testing.T
	conn *dbus.Conn
	item string
}

func (m dbusMenu) layout() map[string]entry {
	m.t.Helper()
	var rev uint32
	var root struct {
		ID       int32
		Props    map[string]dbus.Variant
		Children []dbus.Variant
	}
	err := m.conn.Object(m.item, "/StatusNotifierItem/menu").
		Call("com.canonical.dbusmenu.GetLayout", 0, int32(0), int32(-1), []string{}).Store(&rev, &root)
	require.NoError(m.t, err)
	out := map[string]entry{}
	for _, c := range root.Children {
		f, ok := c.Value().([]any)
		require.True(m.t, ok, "child %v", c)
		props := f[1].(map[string]dbus.Variant)
		if t, ok := props["type"]; ok && t.Value() == "separator" {
			continue
		}
		e := entry{ID: f[0].(int32), Enabled: true, Visible: true}
		if v, ok := props["label"]; ok {
			e.Label = v.Value().(string)
		}
		if v, ok := props["enabled"]; ok {
			e.Enabled = v.Value().(bool)
		}
		if v, ok := props["visible"]; ok {
			e.Visible = v.Value().(bool)
		}
		if v, ok := props["toggle-state"]; ok {
			e.Toggle = v.Value().(int32)
		}
		out[e.Label] = e
	}
	return out
}

// status is the first entry's label.
func (m dbusMenu) status() string {
	for label, e := range m.layout() {
		if e.ID == 1 {
			return label
		}
	}
	return ""
}

func (m dbusMenu) title() string {
	v, err := m.conn.Object(m.item, "/StatusNotifierItem").GetProperty("org.kde.StatusNotifierItem.Title")
	require.NoError(m.t, err)
	return v.Value().(string)
}

// icon is the item's IconPixmap: ARGB32 pixels, big-endian, of its first
// size.
func (m dbusMenu) icon() (w, h int32, argb []byte) {
	v, err := m.conn.Object(m.item, "/StatusNotifierItem").GetProperty("org.kde.StatusNotifierItem.IconPixmap")
	require.NoError(m.t, err)
	var pix []struct {
		W, H int32
		ARGB []byte
	}
	require.NoError(m.t, dbus.Store([]any{v.Value()}, &pix))
	require.NotEmpty(m.t, pix)
	return pix[0].W, pix[0].H, pix[0].ARGB
}

// progressBar is how much of the icon's bottom row is the progress bar's
// fill colour, in [0, 1].
func progressBar(w, h int32, argb []byte) float64 {
	row := argb[4*int(w)*int(h-1):]
	n := 0
	for x := range int(w) {
		p := row[4*x:]
		if p[0] == 0xff && p[1] == 0x2f && p[2] == 0x80 && p[3] == 0xed {
			n++
		}
	}
	return float64(n) / float64(w)
}

func (m dbusMenu) click(label string) {
	m.t.Helper()
	require.NoError(m.t, m.event(label))
}

// clickQuit clicks Quit. The app may be gone before its reply to the
// click leaves it, so the bus's "recipient disconnected without replying"
// counts as the click landing; the caller then checks the exit itself.
func (m dbusMenu) clickQuit() {
	m.t.Helper()
	err := m.event(LabelQuit)
	var de dbus.Error
	if errors.As(err, &de) && de.Name == "org.freedesktop.DBus.Error.NoReply" {
		return
	}
	require.NoError(m.t, err)
}

// event sends the dbusmenu "clicked" event to an enabled, visible entry.
func (m dbusMenu) event(label string) error {
	m.t.Helper()
	e, ok := m.layout()[label]
	require.True(m.t, ok, "no menu entry %q", label)
	require.True(m.t, e.Enabled && e.Visible, "entry %q is not clickable: %+v", label, e)
	return m.conn.Object(m.item, "/StatusNotifierItem/menu").
		Call("com.canonical.dbusmenu.Event", 0, e.ID, "clicked", dbus.MakeVariant(""), uint32(0)).Err
}

func writeSysfs(t *testing.T, root string, supplies map[string]map[string]string) {
	t.Helper()
	for name, files := range supplies {
		dir := filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		for f, v := range files {
			require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte(v+"\n"), 0o644))
		}
	}
}

// TestTrayOverDBus starts the app in a child process against the test
// bus's tray host and notification server, reads its menu through
// com.canonical.dbusmenu and clicks through a session: download, copy the
// API address, launch at login, warm overnight, quit.
func TestTrayOverDBus(t *testing.T) {
	dir := t.TempDir()
	writeSysfs(t, filepath.Join(dir, "power"), map[string]map[string]string{
		"AC":   {"type": "Mains", "online": "1"},
		"BAT0": {"type": "Battery", "status": "Charging"},
	})
	desk.reset()
	hub := newGatedHub(t)

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), trayChildEnv+"=1", "DELTAFIN_TEST_DIR="+dir,
		"HF_ENDPOINT="+hub.URL(), "HF_TOKEN="+hub.Token)
	logs := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.WaitDelay = 5 * time.Second
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	var exitErr error
	go func() {
		exitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("app output:\n%s", logs.String())
		}
	})

	require.Eventually(t, func() bool { return desk.registered() != "" }, 20*time.Second, 20*time.Millisecond,
		"the app never registered with the StatusNotifierWatcher")
	m := dbusMenu{t: t, conn: desk.conn, item: desk.registered()}

	// At launch with nothing installed it serves the demo model.
	serving := regexp.MustCompile(`serving (http://127\.0\.0\.1:\d+)$`)
	require.Eventually(t, func() bool { return serving.MatchString(m.status()) }, 20*time.Second, 20*time.Millisecond)
	status := m.status()
	require.True(t, strings.HasPrefix(status, "Not installed · demo model: random weights · serving"), status)
	layout := m.layout()
	for _, label := range []string{LabelDownloadStream, LabelDownloadFull, LabelWarm, LabelCopyAddress,
		LabelStopServer, LabelOpenData, LabelLogin, LabelQuit} {
		require.Contains(t, layout, label)
		require.True(t, layout[label].Visible, label)
	}
	require.False(t, layout[LabelUpgrade].Visible, "upgrade shows only on a stream install")
	require.False(t, layout[LabelPause].Visible)

	// Download: progress in the status line and the title, then a
	// notification, then a stream install.
	// The shard headers and a few chunks are answered, and the rest wait
	// until the progress has been seen in the status line, the title and
	// the icon (the panel shows the icon; few hosts draw a title).
	w, h, idle := m.icon()
	require.Zero(t, progressBar(w, h, idle))
	hub.hold(4*2 + 6)
	// No dialog tool here: the first click asks in a notification with the
	// disk check's figures, the second starts the download.
	m.click(LabelDownloadStream)
	require.Contains(t, desk.waitNotification(t, "Download Kimi K3 (stream)?").Body, "Click "+LabelDownloadStream+" again to start.")
	require.Eventually(t, func() bool { return m.layout()[LabelDownloadStream].Enabled }, 20*time.Second, 10*time.Millisecond)
	m.click(LabelDownloadStream)
	require.Eventually(t, func() bool {
		_, _, busy := m.icon()
		return strings.HasPrefix(m.status(), "Downloading ") && strings.HasPrefix(m.title(), "↓ ") && progressBar(w, h, busy) > 0
	}, 20*time.Second, 10*time.Millisecond, "no download progress in the menu, the title and the icon")
	hub.release()
	// The status line and the icon are separate DBus properties, updated
	// one after the other: wait for both.
	require.Eventually(t, func() bool {
		_, _, done := m.icon()
		return strings.HasPrefix(m.status(), "Stream install") && bytes.Equal(idle, done)
	}, 20*time.Second, 10*time.Millisecond, "the status says stream install and the plain icon is back once the download is done")
	n := desk.waitNotification(t, "Download finished")
	require.Equal(t, "Deltafin", n.App)
	require.Contains(t, n.Body, "stream mode")
	cfg := DefaultConfig(func(string) string { return "" })
	cfg.DataDir = filepath.Join(dir, "data")
	want, err := os.ReadFile("../testdata/k3-tiny/config.json")
	require.NoError(t, err)
	got, err := os.ReadFile(filepath.Join(cfg.ModelDir(), "config.json"))
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.True(t, m.layout()[LabelUpgrade].Visible)

	// The server now serves the installed model instead of the demo.
	require.Eventually(t, func() bool {
		s := m.status()
		return serving.MatchString(s) && !strings.Contains(s, "demo")
	}, 20*time.Second, 20*time.Millisecond)
	addr := serving.FindStringSubmatch(m.status())[1]
	resp, err := http.Get(addr + "/v1/models")
	require.NoError(t, err)
	models, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(models))
	require.Contains(t, string(models), "deltafin-kimi-k3")
	m.click(LabelCopyAddress)
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "clipboard"))
		return string(b) == addr+"/v1"
	}, 10*time.Second, 20*time.Millisecond, "Copy API address copies the base URL a client needs")
	require.Equal(t, addr+"/v1", desk.waitNotification(t, "API address copied").Body)

	m.click(LabelLogin)
	desktopFile := filepath.Join(dir, "config", "autostart", "deltafin.desktop")
	require.Eventually(t, func() bool { return m.layout()[LabelLogin].Toggle == 1 }, 10*time.Second, 20*time.Millisecond)
	b, err := os.ReadFile(desktopFile)
	require.NoError(t, err)
	require.Contains(t, string(b), `Exec="/opt/Deltafin Test/deltafin"`)

	// Warm overnight: the logind twin says idle for an hour, sysfs says AC.
	desk.setIdle(true, time.Hour)
	// The switch may be on for less than one of the tray's 250 ms
	// renders (warming k3-tiny is quick): the notification says it ran.
	m.click(LabelWarm)
	n = desk.waitNotification(t, "Warming finished")
	require.Regexp(t, `^Fetched [1-9][0-9]* experts \([0-9.]+ [kM]B\): every expert is on disk\.$`, n.Body)
	require.Eventually(t, func() bool { return strings.HasPrefix(m.status(), "Full install") }, 10*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool { return m.layout()[LabelWarm].Toggle == 0 }, 10*time.Second, 20*time.Millisecond,
		"warming switches itself off when every expert is on disk")

	m.clickQuit()
	select {
	case <-exited:
		require.NoError(t, exitErr, "the app did not exit cleanly")
	case <-time.After(20 * time.Second):
		require.FailNow(t, "the app did not quit")
	}
	require.NotContains(t, logs.String(), "panic")
	// The app remembers nothing pending after a finished download.
	saved, err := loadState(filepath.Join(dir, "data"))
	require.NoError(t, err)
	require.Equal(t, savedState{ServerHost: saved.ServerHost, ServerPort: saved.ServerPort}, saved, "nothing pending")
}
