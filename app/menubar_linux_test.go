package app

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/downloader/hubtest"
)

// These tests drive the App without a tray: clicks through Click, the
// menu through Menu, notifications through beeep to the test bus's
// notification server, idle time through the logind twin.

func testConfig(t *testing.T) Config {
	cfg := DefaultConfig(func(string) string { return "" })
	cfg.DataDir = t.TempDir()
	cfg.WarmPoll, cfg.WarmIdleAfter, cfg.Server.Port = 20*time.Millisecond, time.Minute, 0
	require.NoError(t, cfg.Validate())
	return cfg
}

// hubAppConfig is testConfig pointed at the fake hub, one request at a time.
func hubAppConfig(t *testing.T, h *hubtest.Hub) Config {
	cfg := hubConfig(t, h)
	cfg.WarmPoll, cfg.WarmIdleAfter, cfg.Jobs, cfg.Server.Port = 20*time.Millisecond, time.Minute, 1, 0
	return cfg
}

// testDeps are the real downloader over the fake hub (when cfg points at
// one) with small chunks, a counting warmer, a loopback server, beeep, the
// logind twin on the test bus and sysfs power under power.
func testDeps(cfg Config, power string) Deps {
	mi := newMirrorInstall(cfg)
	mi.headroom, mi.chunkSize = 1, 16<<10
	return Deps{
		Downloader: mi,
		Warmer:     &countingWarmer{total: 30, step: 10 * time.Millisecond, started: make(chan struct{}, 1)},
		Server:     &apiServer{cfg: cfg, mi: mi, demo: os.DirFS("../testdata/k3-tiny"), log: slog.Default()},
		Notifier:   NewNotifier(),
		Idle:       &logindIdle{now: time.Now, dial: privateBus},
		Power:      sysfsPower{root: power},
	}
}

func startApp(t *testing.T, cfg Config, deps Deps) *App {
	t.Helper()
	a := New(cfg, deps, nil)
	require.NoError(t, a.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, a.Close(context.Background())) })
	return a
}

// clickDownload clicks a Download entry twice, as a user without a dialog
// tool does: the first click notifies the disk check's figures, the second
// starts the download.
func clickDownload(t *testing.T, a *App, id ItemID) {
	t.Helper()
	a.Click(id)
	n := desk.waitNotification(t, "Download Kimi K3 (")
	require.Regexp(t, `Free disk: [0-9.]+ [kMGTPE]?B; [0-9.]+ [kMGTPE]?B stay free afterwards\. Click Download .* again to start\.$`, n.Body)
	waitFor(t, a, "asked", func(s State) bool { return !s.Connecting })
	a.Click(id)
	waitFor(t, a, "downloading", func(s State) bool { return s.Downloading || s.Pending != 0 })
}

// TestDownloadAsksFirst: with a dialog tool the question carries the disk
// check's figures; "Cancel" downloads nothing, "Download" starts it.
func TestDownloadAsksFirst(t *testing.T) {
	desk.reset()
	hub := newGatedHub(t)
	cfg := hubAppConfig(t, hub.Hub)
	asked := filepath.Join(t.TempDir(), "asked")
	answer := filepath.Join(t.TempDir(), "answer")
	require.NoError(t, os.WriteFile(answer, []byte("1"), 0o644))
	deps := testDeps(cfg, t.TempDir())
	// zenity's shape: the question in its arguments, the answer in its
	// exit status. The question lands whole (written aside, then renamed):
	// the test reads it as soon as the file exists.
	deps.Desktop = cmdDesktop{confirm: [][]string{{"sh", "-c", `printf '%s\n' "$@" > "$0.part" && mv "$0.part" "$0"; exit $(cat "$1")`, asked, answer}}}
	a := startApp(t, cfg, deps)
	a.Click(ItemDownloadStream)
	require.Eventually(t, func() bool { _, err := os.Stat(asked); return err == nil }, 20*time.Second, 5*time.Millisecond)
	st := waitFor(t, a, "cancelled", func(s State) bool { return !s.Connecting })
	require.False(t, st.Downloading)
	require.Zero(t, st.Pending)
	b, err := os.ReadFile(asked)
	require.NoError(t, err)
	require.Contains(t, string(b), "--title\nDownload Kimi K3 (stream)?\n")
	require.Regexp(t, `Kimi K3 in stream mode: the spine now \(the experts come on demand\), [0-9.]+ [kMG]?B to download( \([0-9.]+ [kMG]?B already here\))?\. Free disk: [0-9.]+ [kMGTPE]?B; 1 B stay free afterwards\.`, string(b))

	require.NoError(t, os.WriteFile(answer, []byte("0"), 0o644))
	a.Click(ItemDownloadStream)
	n := desk.waitNotification(t, "Download finished")
	require.Regexp(t, `^Kimi K3 is installed \(stream mode\)\.\nSee http://127\.0\.0\.1:\d+/model$`, n.Body, "the notification names the page")
}

// TestConnectingToASilentHub: a hub that accepts the connection and never
// answers shows "Connecting to the hub…", then fails with a clear message.
func TestConnectingToASilentHub(t *testing.T) {
	desk.reset()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // accepted, never answered
		}
	}()
	cfg := testConfig(t)
	cfg.HFEndpoint, cfg.HubStall = "http://"+ln.Addr().String(), 2*time.Second
	a := startApp(t, cfg, testDeps(cfg, t.TempDir()))
	a.Click(ItemDownloadStream)
	st := waitFor(t, a, "connecting", func(s State) bool { return s.Connecting })
	require.Equal(t, "Connecting to the hub…", strings.SplitN(statusLine(st), " · ", 2)[0])
	require.False(t, a.Menu().Item(ItemDownloadStream).Enabled, "no second download while connecting")
	n := desk.waitNotification(t, "Download failed")
	require.True(t, strings.HasPrefix(n.Body, "the hub at "+cfg.HFEndpoint+" did not answer in 2s (check the"), n.Body)
	st = waitFor(t, a, "given up", func(s State) bool { return !s.Connecting })
	require.True(t, strings.HasPrefix(st.Problem, "Download failed: the hub at "), st.Problem)
}

func waitFor(t *testing.T, a *App, what string, ok func(State) bool) State {
	t.Helper()
	var st State
	require.Eventually(t, func() bool { st = a.State(); return ok(st) }, 20*time.Second, 5*time.Millisecond, what)
	return st
}

func TestDownloadPausesAndResumesAfterRelaunch(t *testing.T) {
	desk.reset()
	hub := newGatedHub(t)
	cfg := hubAppConfig(t, hub.Hub)
	deps := testDeps(cfg, t.TempDir())
	a := New(cfg, deps, nil)
	require.NoError(t, a.Start(t.Context()))
	waitFor(t, a, "demo server", func(s State) bool { return s.Demo && s.ServerAddr != "" })

	// The shard headers (two range requests each) and a few chunks are
	// answered, the rest wait: the download is certainly in progress, and
	// certainly not finished, when Pause is clicked.
	hub.hold(4*2 + 12)
	clickDownload(t, a, ItemDownloadStream)
	waitFor(t, a, "progress", func(s State) bool { return s.Downloading && s.Download.Done > 0 })
	a.Click(ItemPause)
	st := waitFor(t, a, "paused", func(s State) bool { return !s.Downloading })
	require.Equal(t, ModeStream, st.Pending)
	require.Equal(t, LabelResume, a.Menu().Item(ItemPause).Label)
	require.Less(t, st.Download.Done, st.Download.Total)
	require.NoError(t, a.Close(t.Context()))
	hub.release()

	// Relaunch: the menu offers to resume, and resuming completes.
	deps = testDeps(cfg, t.TempDir())
	a = startApp(t, cfg, deps)
	st = a.State()
	require.Equal(t, ModeStream, st.Pending)
	require.False(t, st.Downloading)
	m := a.Menu()
	require.True(t, m.Item(ItemPause).Visible)
	require.Equal(t, LabelResume, m.Item(ItemPause).Label)
	require.False(t, m.Item(ItemDownloadStream).Visible)
	a.Click(ItemPause)
	n := desk.waitNotification(t, "Download finished")
	require.Regexp(t, `^Kimi K3 is installed \(stream mode\)\.\nSee http://127\.0\.0\.1:\d+/model$`, n.Body, "the notification names the page")
	st = waitFor(t, a, "stream install", func(s State) bool { return s.Install.Mode == InstallStream && !s.Downloading })
	require.Zero(t, st.Pending)
	saved, err := loadState(cfg.DataDir)
	require.NoError(t, err)
	require.Equal(t, savedState{ServerHost: saved.ServerHost, ServerPort: saved.ServerPort}, saved, "nothing pending")
	for _, name := range []string{"config.json", "model.safetensors.index.json", "tiktoken.model"} {
		want, err := os.ReadFile(filepath.Join("../testdata/k3-tiny", name))
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(cfg.ModelDir(), name))
		require.NoError(t, err)
		require.Equal(t, want, got, name)
	}
	// The server moved from the demo to the installed model.
	st = waitFor(t, a, "real model served", func(s State) bool { return !s.Demo && s.ServerAddr != "" })
	resp, err := http.Get(st.ServerAddr + "/v1/models")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.Contains(t, string(body), "deltafin-kimi-k3")
}

func TestDownloadFailureNeedsTheUser(t *testing.T) {
	desk.reset()
	cfg := hubAppConfig(t, hubtest.New(t, filepath.Join("..", "testdata", "k3-tiny")))
	deps := testDeps(cfg, t.TempDir())
	deps.Downloader.(*mirrorInstall).headroom = 1 << 62 // more than any disk
	a := startApp(t, cfg, deps)
	a.Click(ItemDownloadStream) // the disk check refuses before anything is asked
	n := desk.waitNotification(t, "Download failed")
	require.Regexp(t, `^not enough free disk: free [0-9.]+ [kMGTPE]B more for stream mode`, n.Body)
	st := waitFor(t, a, "problem shown", func(s State) bool { return s.Problem != "" })
	require.Equal(t, "Download failed: "+n.Body, a.Menu().Item(ItemStatus).Label)
	require.Zero(t, st.Pending, "a download refused by the disk check never started")
	require.True(t, a.Menu().Item(ItemDownloadStream).Enabled, "and can be asked for again")
}

func TestUpgradeToFull(t *testing.T) {
	desk.reset()
	hub := newGatedHub(t)
	cfg := hubAppConfig(t, hub.Hub)
	deps := testDeps(cfg, t.TempDir())
	mi := deps.Downloader.(*mirrorInstall)
	require.NoError(t, mi.Download(t.Context(), ModeStream, func(Progress) {}))
	require.NoError(t, mi.Close())
	a := startApp(t, cfg, deps)
	require.Equal(t, InstallStream, a.State().Install.Mode)
	require.True(t, a.Menu().Item(ItemUpgrade).Visible)
	// The stream install is served first (its open checks the parts it
	// reads against the hub), then the hub holds the upgrade's requests:
	// held before, the open's checks waited on the gate.
	st := waitFor(t, a, "serving the stream install", func(s State) bool { return s.ServerAddr != "" || s.Problem != "" })
	require.Empty(t, st.Problem)
	hub.hold(0)
	a.Click(ItemUpgrade)
	waitFor(t, a, "upgrading", func(s State) bool { return s.Downloading && s.Upgrade })
	hub.release()
	n := desk.waitNotification(t, "Upgrade finished")
	require.Contains(t, n.Body, "full install")
	waitFor(t, a, "full", func(s State) bool { return s.Install.Mode == InstallFull && !s.Downloading })
	require.Equal(t, "Full install", strings.SplitN(a.Menu().Item(ItemStatus).Label, " · ", 2)[0])
}

func TestWarmingFollowsIdleAndPower(t *testing.T) {
	desk.reset()
	cfg := testConfig(t)
	power := t.TempDir()
	writeSysfs(t, power, map[string]map[string]string{
		"AC": {"type": "Mains", "online": "0"}, "BAT0": {"type": "Battery", "status": "Discharging"},
	})
	deps := testDeps(cfg, power)
	w := deps.Warmer.(*countingWarmer)
	w.step = 30 * time.Millisecond
	a := startApp(t, cfg, deps)

	a.Click(ItemWarm)
	waitFor(t, a, "waits for idle", func(s State) bool {
		return s.WarmEnabled && s.WarmNote == "warming waits for the machine to be idle"
	})
	desk.setIdle(true, time.Hour)
	waitFor(t, a, "waits for AC", func(s State) bool { return s.WarmNote == "warming waits for AC power" })
	writeSysfs(t, power, map[string]map[string]string{"AC": {"online": "1"}})
	<-w.started
	waitFor(t, a, "warming", func(s State) bool { return s.Warming && s.Warm.Done > 0 })
	require.True(t, strings.HasPrefix(a.Menu().Title, "warming "))

	// The user comes back: warming stops, and resumes at the next idle.
	desk.setIdle(false, 0)
	st := waitFor(t, a, "paused by activity", func(s State) bool { return !s.Warming })
	require.Equal(t, "warming waits for the machine to be idle", st.WarmNote)
	w.mu.Lock()
	doneAtPause := w.done
	w.mu.Unlock()
	require.Less(t, doneAtPause, w.total)
	desk.setIdle(true, time.Hour)
	<-w.started
	n := desk.waitNotification(t, "Warming finished")
	require.Equal(t, "Fetched 30 experts (526.4 MB): every expert is on disk.", n.Body)
	waitFor(t, a, "switched off", func(s State) bool { return !s.WarmEnabled && !s.Warming })
	saved, err := loadState(cfg.DataDir)
	require.NoError(t, err)
	require.False(t, saved.WarmEnabled)
}

func TestWarmSwitchSurvivesRelaunch(t *testing.T) {
	desk.reset()
	cfg := testConfig(t)
	deps := testDeps(cfg, t.TempDir())
	a := New(cfg, deps, nil)
	require.NoError(t, a.Start(t.Context()))
	a.Click(ItemWarm)
	waitFor(t, a, "on", func(s State) bool { return s.WarmEnabled && s.WarmNote != "" })
	require.NoError(t, a.Close(t.Context()))
	a = startApp(t, cfg, testDeps(cfg, t.TempDir()))
	require.True(t, a.State().WarmEnabled)
	require.True(t, a.Menu().Item(ItemWarm).Checked)
	a.Click(ItemWarm)
	waitFor(t, a, "off", func(s State) bool { return !s.WarmEnabled })
}

func TestLongAnswerNotification(t *testing.T) {
	desk.reset()
	cfg := testConfig(t)
	a := startApp(t, cfg, Deps{Notifier: NewNotifier()})
	a.AnswerFinished(29*time.Second, "too quick to mention")
	a.AnswerFinished(75*time.Second, "The capital of France is Paris, a city on the Seine with about two million people.")
	n := desk.waitNotification(t, "Answer finished")
	require.Equal(t, "Answer finished after 75 s", n.Summary)
	require.Equal(t, "The capital of France is Paris, a city on the Seine with…", n.Body)

	// The CLI's path, without an App.
	require.NoError(t, NotifyLongAnswer(t.Context(), cfg, NewNotifier(), 10*time.Second, "short"))
	require.NoError(t, NotifyLongAnswer(t.Context(), cfg, NewNotifier(), 2*time.Minute, "Done."))
	n = desk.waitNotification(t, "Answer finished")
	require.Equal(t, "Answer finished after 2 min", n.Summary)
	require.Equal(t, "Done.", n.Body)
	cfg.NotifyAfter = 0
	require.NoError(t, NotifyLongAnswer(t.Context(), cfg, NewNotifier(), time.Hour, "never"))
	select {
	case n := <-desk.notes:
		require.FailNow(t, "unexpected notification", "%+v", n)
	default:
	}
}

func TestServerStartStop(t *testing.T) {
	desk.reset()
	cfg := testConfig(t)
	cfg.Server.Port = 0
	mi := newMirrorInstall(cfg)
	a := startApp(t, cfg, Deps{Downloader: mi, Server: &apiServer{cfg: cfg, mi: mi, demo: os.DirFS("../testdata/k3-tiny"), log: slog.Default()}})
	st := waitFor(t, a, "serving", func(s State) bool { return s.ServerAddr != "" || s.Problem != "" })
	require.Empty(t, st.Problem)
	require.True(t, st.Demo)
	require.Equal(t, LabelStopServer, a.Menu().Item(ItemServer).Label)
	resp, err := http.Get(st.ServerAddr + "/v1/models")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.Contains(t, string(body), `"id":"deltafin-demo"`, "the demo is not served as K3")
	require.Contains(t, string(body), `"description":"the demo model: random weights`)

	a.Click(ItemServer)
	waitFor(t, a, "stopped", func(s State) bool { return s.ServerAddr == "" })
	_, err = http.Get(st.ServerAddr + "/health")
	require.Error(t, err)
	require.False(t, a.Menu().Item(ItemCopyAddress).Enabled)
	a.Click(ItemServer)
	st = waitFor(t, a, "serving again", func(s State) bool { return s.ServerAddr != "" })
	resp, err = http.Get(st.ServerAddr + "/health")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

func TestOpenDataFolder(t *testing.T) {
	cfg := testConfig(t)
	cfg.DataDir = filepath.Join(cfg.DataDir, "not-yet")
	out := filepath.Join(t.TempDir(), "opened")
	a := startApp(t, cfg, Deps{Desktop: cmdDesktop{open: [][]string{{"sh", "-c", `printf %s "$1" > "$0"`, out}}}})
	a.Click(ItemOpenData)
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(out)
		return string(b) == cfg.DataDir
	}, 10*time.Second, 5*time.Millisecond)
	require.DirExists(t, cfg.DataDir)
}

// "Open Deltafin…" opens the web page in the default browser (here a
// stand-in for xdg-open), and the page is there, on the API's port.
func TestOpenWeb(t *testing.T) {
	cfg := testConfig(t)
	cfg.Server.Port = 0
	out := filepath.Join(t.TempDir(), "opened")
	mi := newMirrorInstall(cfg)
	a := startApp(t, cfg, Deps{Downloader: mi, Server: &apiServer{cfg: cfg, mi: mi, demo: os.DirFS("../testdata/k3-tiny"), log: slog.Default()},
		Desktop: cmdDesktop{open: [][]string{{"sh", "-c", `printf %s "$1" > "$0"`, out}}}})
	st := waitFor(t, a, "serving", func(s State) bool { return s.ServerAddr != "" || s.Problem != "" })
	require.Empty(t, st.Problem)
	require.True(t, a.Menu().Item(ItemOpenWeb).Enabled)
	a.Click(ItemOpenWeb)
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(out)
		return string(b) == st.ServerAddr+"/"
	}, 10*time.Second, 5*time.Millisecond)
	resp, err := http.Get(st.ServerAddr + "/")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(body), "<title>Deltafin · Ask</title>")
	require.Contains(t, resp.Header.Get("Content-Security-Policy"), "default-src 'self'")
}

func TestBadStateFile(t *testing.T) {
	for _, body := range []string{"{", `{"pending_download":"sideways"}`} {
		t.Run(body, func(t *testing.T) {
			cfg := testConfig(t)
			require.NoError(t, os.WriteFile(filepath.Join(cfg.DataDir, stateFile), []byte(body), 0o644))
			err := New(cfg, Deps{}, nil).Start(t.Context())
			require.ErrorIs(t, err, ErrBadState)
			require.Contains(t, err.Error(), stateFile)
		})
	}
}

func TestBusyHoldsOneKeepAwake(t *testing.T) {
	var pids []int
	keep := func(ctx context.Context, reason string) (func(), error) {
		release, err := holdProcess(ctx, []string{"sleep", "600"})
		if err == nil {
			pids = append(pids, len(pids))
		}
		return release, err
	}
	cfg := testConfig(t)
	a := startApp(t, cfg, Deps{KeepAwake: keep})
	done1 := a.Busy("generating")
	done2 := a.Busy("downloading")
	require.Len(t, pids, 1, "nested holders share one assertion")
	held := func() bool { a.mu.Lock(); defer a.mu.Unlock(); return a.release != nil }
	done1()
	done1()
	require.True(t, held())
	done2()
	require.False(t, held())
	a.Busy("again")()
	require.Len(t, pids, 2)
}

func TestCheckDesktopWithoutTrayHost(t *testing.T) {
	// A bare bus of its own: no StatusNotifierWatcher there.
	stop, addr := startBareBus(t)
	defer stop()
	cfg := testConfig(t)
	cfg.SessionBus = addr
	warning, err := checkDesktop(t.Context(), cfg)
	require.NoError(t, err)
	require.Contains(t, warning, "no StatusNotifierWatcher")
}

func TestCheckDesktop(t *testing.T) {
	for _, tc := range []struct {
		name, bus, runtime string
		ok                 bool
	}{
		{"no bus", "", "", false},
		{"runtime dir without a bus", "", t.TempDir(), false},
		{"dead socket", "unix:path=" + filepath.Join(t.TempDir(), "none"), "", false},
		{"test bus", desk.addr, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			cfg.SessionBus, cfg.RuntimeDir = tc.bus, tc.runtime
			warning, err := checkDesktop(t.Context(), cfg)
			if tc.ok {
				require.NoError(t, err)
				require.Empty(t, warning, "the test bus has a StatusNotifierWatcher")
				return
			}
			require.ErrorIs(t, err, ErrNoTray)
		})
	}
}

// TestLogindIdleTwin reads idle time from the fake logind on the test bus.
// The production twin dials the system bus instead.
func TestLogindIdleTwin(t *testing.T) {
	desk.reset()
	l := &logindIdle{now: time.Now, dial: privateBus}
	d, err := l.IdleTime(t.Context())
	require.NoError(t, err)
	require.Zero(t, d)
	desk.setIdle(true, 90*time.Minute)
	d, err = l.IdleTime(t.Context())
	require.NoError(t, err)
	require.InDelta(t, 90*time.Minute, d, float64(time.Minute))

	desk.logind.SetMust(logindIface, "IdleSinceHint", uint64(0))
	_, err = l.IdleTime(t.Context())
	require.ErrorIs(t, err, ErrIdleUnknown)

	nobody := &logindIdle{now: time.Now, dial: func() (*dbus.Conn, error) { return nil, errors.New("no system bus") }}
	_, err = nobody.IdleTime(t.Context())
	require.ErrorIs(t, err, ErrIdleUnknown)
	desk.reset()
}
