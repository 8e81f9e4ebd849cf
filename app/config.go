package app

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/adrg/xdg"
)

// Config is every setting Deltafin has, filled once by main.go from flags and
// environment variables. Packages below app receive the parts they need as
// options; nothing below reads the environment.
type Config struct {
	// DataDir holds the model mirror, presence maps, heat histogram and app
	// state. Default: $XDG_DATA_HOME/deltafin (~/Library/Application
	// Support/deltafin on macOS); DELTAFIN_HOME or --data-dir override it.
	DataDir string

	// Model source (issue 7). HFEndpoint and HFToken follow huggingface_hub:
	// HF_ENDPOINT (default https://huggingface.co) and HF_TOKEN (else
	// HUGGING_FACE_HUB_TOKEN, else the token file at HF_TOKEN_PATH or
	// $HF_HOME/token). Repo and Revision: --repo, --revision.
	HFEndpoint string
	HFToken    string
	Repo       string
	Revision   string
	// Jobs is the number of parallel range requests (--jobs).
	Jobs int
	// Run holds `deltafin run`'s flags (run.go).
	Run RunConfig

	// Menu-bar app (issue 9).
	// NotifyAfter: answers that take longer get a notification (0: never).
	NotifyAfter time.Duration
	// WarmIdleAfter: overnight warming starts after this long without
	// user input, on AC power.
	WarmIdleAfter time.Duration
	// WarmPoll: how often warming checks idle time and power.
	WarmPoll time.Duration
	// SessionBus is DBUS_SESSION_BUS_ADDRESS and RuntimeDir is
	// XDG_RUNTIME_DIR: on Linux the tray and notifications need a
	// session bus, and the app refuses to start without one.
	SessionBus, RuntimeDir string
}

// Getenv is the shape of os.Getenv, so tests can pass a map lookup.
type Getenv func(string) string

// DefaultConfig returns the configuration before flags, with the environment
// applied.
func DefaultConfig(getenv Getenv) Config {
	c := Config{
		DataDir:     filepath.Join(xdg.DataHome, "deltafin"),
		Run:         RunConfig{MaxNew: DefaultMaxNew},
		NotifyAfter: 30 * time.Second, WarmIdleAfter: 10 * time.Minute, WarmPoll: 30 * time.Second,
		SessionBus: getenv("DBUS_SESSION_BUS_ADDRESS"), RuntimeDir: getenv("XDG_RUNTIME_DIR"),
	}
	if v := getenv("DELTAFIN_HOME"); v != "" {
		c.DataDir = v
	}
	hubFromEnv(getenv, &c)
	return c
}

// Validate normalises paths and rejects settings that cannot work.
func (c *Config) Validate() error {
	if c.DataDir == "" {
		return fmt.Errorf("app: empty data directory")
	}
	abs, err := filepath.Abs(c.DataDir)
	if err != nil {
		return fmt.Errorf("app: data directory %q: %w", c.DataDir, err)
	}
	c.DataDir = abs
	if c.NotifyAfter < 0 || c.WarmIdleAfter < 0 {
		return fmt.Errorf("app: negative duration (notify after %v, warm idle after %v)", c.NotifyAfter, c.WarmIdleAfter)
	}
	if c.WarmPoll <= 0 {
		return fmt.Errorf("app: warm poll interval must be positive, got %v", c.WarmPoll)
	}
	return nil
}
