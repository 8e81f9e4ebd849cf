package app

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/deltafin/deltafin/web"
)

// The App is the web page's Control (package web): /model's buttons click
// the same menu entries, and /settings edits the settings the app keeps in
// its state file.

var _ web.Control = (*App)(nil)

// PageReporter is implemented by a Server that serves the web page: New
// hands it the App, which the page asks for the app's state and actions.
type PageReporter interface {
	ServePage(web.Control)
}

// ErrAction: a /model button whose action does not apply now.
var ErrAction = errors.New("app: not now")

// Status is the app's state as the page's /model shows it.
func (a *App) Status() web.AppStatus {
	st := a.State()
	paused := st.Pending != 0 && !st.Downloading
	out := web.AppStatus{
		Line: statusLine(st), Install: [...]string{"none", "stream", "full"}[st.Install.Mode],
		ExpertsOnDisk: st.Install.ExpertsCached, ExpertsTotal: st.Install.ExpertsTotal,
		Downloading: st.Downloading, Paused: paused,
		Download: web.Progress{Done: st.Download.Done, Total: st.Download.Total, Rate: st.Download.Rate,
			ETASeconds: st.Download.ETA.Seconds(), Waiting: st.Download.Waiting},
		WarmEnabled: st.WarmEnabled, Warming: st.Warming, WarmNote: st.WarmNote,
		Warm:      web.Progress{Done: st.Warm.Done, Total: st.Warm.Total, Rate: st.Warm.Rate},
		CanPause:  st.Downloading && st.CanDownload,
		CanResume: paused && st.CanDownload,
		CanWarm:   st.WarmEnabled || (st.Install.Mode == InstallStream && st.CanWarm),
	}
	out.Verification = "verified"
	if st.Install.Unverified {
		out.Verification = "unverified"
	}
	if st.Pending != 0 {
		out.Pending = st.Pending.String()
	}
	m := BuildMenu(st)
	out.CanUpgrade = m.Item(ItemUpgrade).Enabled
	out.CanDownload = m.Item(ItemDownloadStream).Enabled
	if m.Item(ItemDownloadStream).Visible && !st.CanDownload {
		out.DownloadNote = "This app was started without its downloader: quit it and run deltafin setup --stream (or --full) in a terminal, then start it again."
	}
	return out
}

// CheckDownload is the disk check the menu's Download asks with, for the
// page's own confirmation.
func (a *App) CheckDownload(ctx context.Context, mode string) (string, error) {
	m, err := downloadMode(mode)
	if err != nil {
		return "", err
	}
	if a.deps.Downloader == nil {
		return "", fmt.Errorf("%w: %s", ErrAction, a.Status().DownloadNote)
	}
	est, err := a.estimate(ctx, m)
	if err != nil {
		return "", err
	}
	return estimateText(m, est), nil
}

func downloadMode(name string) (DownloadMode, error) {
	switch name {
	case "stream":
		return ModeStream, nil
	case "full":
		return ModeFull, nil
	}
	return 0, fmt.Errorf("%w: no download mode %q (stream or full)", ErrAction, name)
}

// Act clicks the menu entry a /model button stands for.
func (a *App) Act(action string) error {
	s := a.Status()
	ok, id := false, ItemID(-1)
	switch action {
	case web.ActDownloadStream, web.ActDownloadFull:
		if !s.CanDownload {
			return fmt.Errorf("%w: %s does not apply (%s)", ErrAction, action, s.Line)
		}
		mode := ModeStream
		if action == web.ActDownloadFull {
			mode = ModeFull
		}
		a.startDownload(mode, false)
		return nil
	case web.ActPause:
		ok, id = s.CanPause, ItemPause
	case web.ActResume:
		ok, id = s.CanResume, ItemPause
	case web.ActUpgrade:
		ok, id = s.CanUpgrade, ItemUpgrade
	case web.ActWarmOn:
		ok, id = s.CanWarm && !s.WarmEnabled, ItemWarm
	case web.ActWarmOff:
		ok, id = s.WarmEnabled, ItemWarm
	default:
		return fmt.Errorf("%w: unknown action %q", ErrAction, action)
	}
	if !ok {
		return fmt.Errorf("%w: %s does not apply (%s)", ErrAction, action, s.Line)
	}
	a.Click(id)
	return nil
}

// Settings are the settings in force.
func (a *App) Settings() web.Settings {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.cfg
	if c.Server.Port == 0 {
		// Any free port was asked for: the one taken is the one to keep.
		if u, err := url.Parse(a.st.ServerAddr); err == nil {
			c.Server.Port, _ = strconv.Atoi(u.Port())
		}
	}
	return web.Settings{Port: c.Server.Port, APIKey: c.Server.APIKey, CORSOrigins: slices.Clone(c.Server.CORSOrigins),
		Queue: c.Server.Queue, WarmOvernight: a.st.WarmEnabled, WarmIdleMinutes: c.WarmIdleAfter.Minutes(),
		NotifyAfterSeconds: c.NotifyAfter.Seconds()}
}

// SaveSettings checks s, saves it in the state file and applies it: the
// notification threshold and warming at once, the server's settings by
// restarting the server (its answers are background jobs in the store:
// they resume).
func (a *App) SaveSettings(s web.Settings) (string, error) {
	if err := checkSettings(s); err != nil {
		return "", err
	}
	a.mu.Lock()
	old := a.cfg.Server
	a.cfg.Server.Port, a.cfg.Server.APIKey, a.cfg.Server.Queue = s.Port, s.APIKey, s.Queue
	a.cfg.Server.CORSOrigins = slices.Clone(s.CORSOrigins)
	a.cfg.NotifyAfter = time.Duration(s.NotifyAfterSeconds * float64(time.Second))
	a.cfg.WarmIdleAfter = time.Duration(s.WarmIdleMinutes * float64(time.Minute))
	sc := a.cfg.Server
	warm := a.st.WarmEnabled
	key, cors, queue := s.APIKey, slices.Clone(s.CORSOrigins), s.Queue
	notify, idle := s.NotifyAfterSeconds, s.WarmIdleMinutes
	a.kept = keptSettings{APIKey: &key, CORSOrigins: &cors, Queue: &queue, NotifyAfter: &notify, WarmIdle: &idle}
	a.saveLocked()
	a.mu.Unlock()
	if s.WarmOvernight != warm {
		a.setWarm(s.WarmOvernight)
	}
	if sc.Port == old.Port && sc.APIKey == old.APIKey && sc.Queue == old.Queue && slices.Equal(sc.CORSOrigins, old.CORSOrigins) {
		return "Saved; in force now.", nil
	}
	r, ok := a.deps.Server.(interface{ SetConfig(ServerConfig) })
	if !ok {
		return "Saved; in force at the next start.", nil
	}
	r.SetConfig(sc)
	if a.State().ServerAddr == "" {
		return "Saved; the server uses them when it starts.", nil
	}
	a.goWork(func(ctx context.Context) {
		a.stopServer(ctx)
		a.startServer(ctx)
	})
	note := "Saved; the server restarts with them (answers in progress resume)."
	if sc.Port != old.Port {
		note += " It moves to port " + strconv.Itoa(sc.Port) + "."
	}
	return note, nil
}

func checkSettings(s web.Settings) error {
	if s.Port < 1 || s.Port > 65535 {
		return fmt.Errorf("the port is 1..65535, not %d", s.Port)
	}
	return keptSettings{APIKey: &s.APIKey, CORSOrigins: &s.CORSOrigins, Queue: &s.Queue,
		NotifyAfter: &s.NotifyAfterSeconds, WarmIdle: &s.WarmIdleMinutes}.check()
}

// Limits of the kept settings: beyond them a value is a mistake (or a
// damaged file), and 1e308 minutes would overflow a time.Duration.
const (
	maxAPIKeyLen   = 256
	maxQueue       = 4096
	maxNotifyAfter = 24 * 3600   // seconds
	maxWarmIdle    = 7 * 24 * 60 // minutes
)

// check validates the settings that are set, on load and on save.
func (k keptSettings) check() error {
	if k.APIKey != nil {
		key := *k.APIKey
		switch {
		case len(key) > maxAPIKeyLen:
			return fmt.Errorf("the API key is at most %d bytes, not %d", maxAPIKeyLen, len(key))
		case !utf8.ValidString(key):
			return fmt.Errorf("the API key is not valid UTF-8")
		case strings.IndexFunc(key, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
			return fmt.Errorf("the API key has no spaces or control characters")
		}
	}
	if k.Queue != nil && (*k.Queue < 0 || *k.Queue > maxQueue) {
		return fmt.Errorf("the queue depth is 0..%d, not %d", maxQueue, *k.Queue)
	}
	if v := k.NotifyAfter; v != nil && !(*v >= 0 && *v <= maxNotifyAfter) {
		return fmt.Errorf("the notification threshold is 0..%d seconds, not %v", maxNotifyAfter, *v)
	}
	if v := k.WarmIdle; v != nil && !(*v >= 0 && *v <= maxWarmIdle) {
		return fmt.Errorf("the idle time before warming is 0..%d minutes, not %v", maxWarmIdle, *v)
	}
	if k.CORSOrigins == nil {
		return nil
	}
	for _, o := range *k.CORSOrigins {
		if o == "*" {
			continue
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" {
			return fmt.Errorf("a CORS origin is scheme://host[:port] (or *), not %q", o)
		}
	}
	return nil
}

// RememberedSettings applies the settings the page saved (the state file)
// to cfg, except those given on the command line (given reports a flag's
// name).
func RememberedSettings(cfg *Config, given func(flag string) bool) error {
	s, err := loadState(cfg.DataDir)
	if err != nil {
		return err
	}
	if s.APIKey != nil && !given("api-key") && cfg.Server.APIKey == "" {
		cfg.Server.APIKey = *s.APIKey
	}
	if s.CORSOrigins != nil && !given("cors-origin") {
		cfg.Server.CORSOrigins = *s.CORSOrigins
	}
	if s.Queue != nil && !given("queue") {
		cfg.Server.Queue = *s.Queue
	}
	if s.NotifyAfter != nil && !given("notify-after") {
		cfg.NotifyAfter = time.Duration(*s.NotifyAfter * float64(time.Second))
	}
	if s.WarmIdle != nil && !given("warm-idle-after") {
		cfg.WarmIdleAfter = time.Duration(*s.WarmIdle * float64(time.Minute))
	}
	return nil
}

// live is the configuration in force: the page's settings change it while
// the app runs.
func (a *App) live() Config {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cfg
}

// pageLine names the web page in a notification's text: desktop
// notifications through beeep carry no action, so the text says where to
// look ("" while the server is stopped).
func pageLine(addr, path, verb string) string {
	if addr == "" {
		return ""
	}
	return "\n" + verb + " " + addr + path
}
