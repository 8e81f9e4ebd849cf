package app

import (
	"bufio"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/downloader/hubtest"
)

// The menu as a person sees it: Debian's Xvfb, its StatusNotifierItem host
// (status-notifier-watcher and gtk-sni-tray-standalone) and the app on a
// private session bus of their own; xdotool opens the menu and ImageMagick's
// import takes the screenshot. make deps installs them all.
var screenTools = []string{"Xvfb", "xdotool", "import", "dbus-daemon", "status-notifier-watcher", "gtk-sni-tray-standalone"}

// screenshotDir is where the screenshots are kept as test artifacts:
// $DELTAFIN_ARTIFACTS, else bin/screenshots in the checkout.
func screenshotDir(t *testing.T) string {
	dir := os.Getenv("DELTAFIN_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("..", "bin", "screenshots")
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return dir
}

// screen is one X display with a tray host, on a session bus of its own.
type screen struct {
	t       *testing.T
	display string
	bus     string
	conn    *dbus.Conn
	w, h    int
}

func startScreen(t *testing.T) *screen {
	for _, tool := range screenTools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed (make deps installs it)", tool)
		}
	}
	s := &screen{t: t, w: 900, h: 600}
	// Xvfb picks a free display and writes its number to fd 3.
	r, w, err := os.Pipe()
	require.NoError(t, err)
	x := exec.Command("Xvfb", "-displayfd", "3", "-screen", "0", fmt.Sprintf("%dx%dx24", s.w, s.h), "-nolisten", "tcp")
	x.ExtraFiles = []*os.File{w}
	require.NoError(t, x.Start())
	w.Close()
	t.Cleanup(func() { x.Process.Kill(); x.Wait() })
	n, err := bufio.NewReader(r).ReadString('\n')
	require.NoError(t, err, "Xvfb did not start")
	s.display = ":" + strings.TrimSpace(n)

	bus := exec.Command("dbus-daemon", "--session", "--nofork", "--print-address=1")
	out, err := bus.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, bus.Start())
	t.Cleanup(func() { bus.Process.Kill(); bus.Wait() })
	addr, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	s.bus = strings.TrimSpace(addr)
	s.conn, err = dbus.Connect(s.bus)
	require.NoError(t, err)
	t.Cleanup(func() { s.conn.Close() })

	s.start("status-notifier-watcher")
	// The watcher takes its name before it exports its object: an item
	// registering in between gets UnknownObject, and the app's systray
	// does not try again. Wait until the object answers.
	watcher := s.conn.Object(sniWatcher, "/StatusNotifierWatcher")
	require.Eventually(t, func() bool {
		_, err := watcher.GetProperty(sniWatcher + ".RegisteredStatusNotifierItems")
		return err == nil
	}, 20*time.Second, 20*time.Millisecond, "no StatusNotifierWatcher")
	s.start("gtk-sni-tray-standalone", "--bottom")
	require.Eventually(t, func() bool {
		v, err := watcher.GetProperty(sniWatcher + ".IsStatusNotifierHostRegistered")
		host, _ := v.Value().(bool)
		return err == nil && host
	}, 20*time.Second, 20*time.Millisecond, "the tray host never registered with the watcher")
	return s
}

// env is the environment of a process on this screen and bus.
func (s *screen) env() []string {
	return append(os.Environ(), "DISPLAY="+s.display, "DBUS_SESSION_BUS_ADDRESS="+s.bus)
}

func (s *screen) start(name string, args ...string) {
	cmd := exec.Command(name, args...)
	cmd.Env = s.env()
	require.NoError(s.t, cmd.Start())
	s.t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
}

func (s *screen) run(name string, args ...string) {
	cmd := exec.Command(name, args...)
	cmd.Env = s.env()
	out, err := cmd.CombinedOutput()
	require.NoError(s.t, err, "%s %v: %s", name, args, out)
}

// item waits for the app's StatusNotifierItem with the real watcher.
func (s *screen) item() string {
	var items []string
	require.Eventually(s.t, func() bool {
		v, err := s.conn.Object(sniWatcher, "/StatusNotifierWatcher").GetProperty(sniWatcher + ".RegisteredStatusNotifierItems")
		if err != nil {
			return false
		}
		items, _ = v.Value().([]string)
		return len(items) > 0
	}, 30*time.Second, 20*time.Millisecond, "the app never registered with the watcher")
	return strings.SplitN(items[0], "/", 2)[0]
}

// shot opens the menu by clicking the icon at the bottom left, waits until
// it is drawn, saves the screen as name.png and closes the menu again. It
// returns the share of the menu's area that is drawn (not background).
func (s *screen) shot(name string) float64 {
	path := filepath.Join(screenshotDir(s.t), name+".png")
	var drawn float64
	require.Eventually(s.t, func() bool {
		s.run("import", "-window", "root", path)
		if drawn = menuDrawn(s.t, path); drawn > 0.5 {
			return true
		}
		// Not open yet (the host may not have drawn the icon when the
		// last click came): click it again.
		s.run("xdotool", "mousemove", "15", strconv.Itoa(s.h-15), "click", "1")
		return false
	}, 20*time.Second, 300*time.Millisecond, "the menu never opened")
	s.run("xdotool", "key", "Escape")
	s.t.Logf("screenshot %s", path)
	return drawn
}

// menuDrawn is the share of light pixels in the region where the host draws
// the menu (above the icon, at the left).
func menuDrawn(t *testing.T, path string) float64 {
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	b := img.Bounds()
	region := image.Rect(5, b.Max.Y-200, 300, b.Max.Y-40)
	light, all := 0, 0
	for y := region.Min.Y; y < region.Max.Y; y += 2 {
		for x := region.Min.X; x < region.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r+g+bl > 3*0xc000 {
				light++
			}
			all++
		}
	}
	return float64(light) / float64(all)
}

// TestMenuScreenshots shows the real menu, under a real StatusNotifierItem
// host, in each state a person meets (serving the demo, downloading with
// the progress in the icon, paused, a download error), saves a screenshot
// of each and checks the menu's text for that state.
func TestMenuScreenshots(t *testing.T) {
	scr := startScreen(t)
	hub := newGatedHub(t)
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(scr.env(), trayChildEnv+"=1", "DELTAFIN_TEST_CONFIRM=yes", "DELTAFIN_TEST_DIR="+dir, "HF_ENDPOINT="+hub.URL(), "HF_TOKEN="+hub.Token)
	logs := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("app output:\n%s", logs.String())
		}
	})
	m := dbusMenu{t: t, conn: scr.conn, item: scr.item()}
	status := func() string { return m.status() }
	wait := func(what string, ok func(string) bool) {
		t.Helper()
		require.Eventually(t, func() bool { return ok(status()) }, 30*time.Second, 20*time.Millisecond, what)
	}
	visible := func() []string {
		var labels []string
		for label, e := range m.layout() {
			if e.Visible && e.ID != 1 {
				labels = append(labels, label)
			}
		}
		return labels
	}

	wait("serving", func(s string) bool { return strings.Contains(s, "demo model: random weights · serving http://") })
	require.ElementsMatch(t, []string{LabelDownloadStream, LabelDownloadFull, LabelWarm, LabelOpenWeb, LabelCopyAddress, LabelStopServer,
		LabelDrives, LabelOpenData, LabelLogin, LabelQuit}, visible())
	scr.shot("menu-serving")

	// Downloading: a few chunks are answered and the rest wait, so the
	// screenshot is of a download in progress.
	hub.hold(4*2 + 6)
	m.click(LabelDownloadStream) // the dialog (a stand-in that says Download) confirms
	wait("downloading", func(s string) bool {
		return strings.HasPrefix(s, "Downloading ") && !strings.HasPrefix(s, "Downloading 0%")
	})
	require.Contains(t, visible(), LabelPause)
	// The status line and the icon are two properties the tray sets one
	// after the other: the icon may still be on its way.
	require.Eventually(t, func() bool { return progressBar(m.icon()) > 0 }, 10*time.Second, 20*time.Millisecond,
		"the icon shows the progress")
	scr.shot("menu-downloading")

	m.click(LabelPause)
	wait("paused", func(s string) bool { return strings.HasPrefix(s, "Download paused at ") })
	require.Contains(t, visible(), LabelResume)
	scr.shot("menu-paused")

	// An error: the hub now refuses every range, so the resumed download
	// fails and the status line says why, in one short line.
	hub.SetFault(func(w http.ResponseWriter, r *http.Request, f *hubtest.File, start, end int64) bool {
		http.Error(w, "gone", http.StatusNotFound)
		return true
	})
	m.click(LabelResume)
	wait("error", func(s string) bool { return strings.HasPrefix(s, "Download failed: ") })
	require.LessOrEqual(t, len([]rune(status())), len("Download failed: ")+maxProblemLen+2)
	scr.shot("menu-error")

	m.clickQuit()
	require.NoError(t, cmd.Wait())
}
