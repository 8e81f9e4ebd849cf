package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/deltafin/deltafin/internal/atomicfile"
)

// savedState is what the menu-bar app remembers across restarts: a
// download that was started and not finished (so it can be resumed from the
// menu after a relaunch), the overnight-warming switch and the settings
// saved on the web page. The downloader's
// presence maps remember the bytes; this remembers the user's intent.
type savedState struct {
	// Drives are the expert drives added (drives.go).
	Drives      []DriveEntry `json:"expert_drives,omitempty"`
	Pending     string       `json:"pending_download,omitempty"` // "stream" or "full"
	Upgrade     bool         `json:"upgrade,omitempty"`
	WarmEnabled bool         `json:"warm_overnight,omitempty"`
	// ServerHost and ServerPort are the app's API address as last set
	// (--host/--port or DELTAFIN_HOST/DELTAFIN_PORT), used when neither is
	// given.
	ServerHost string `json:"server_host,omitempty"`
	ServerPort int    `json:"server_port,omitempty"`
	keptSettings
}

// keptSettings are the settings saved on the web page's /settings (nil:
// never set there, the default or the flag applies; RememberedSettings).
type keptSettings struct {
	APIKey      *string   `json:"api_key,omitempty"`
	CORSOrigins *[]string `json:"cors_origins,omitempty"`
	Queue       *int      `json:"queue,omitempty"`
	NotifyAfter *float64  `json:"notify_after_seconds,omitempty"`
	WarmIdle    *float64  `json:"warm_idle_minutes,omitempty"`
}

const stateFile = "app-state.json"

// ErrBadState marks an app state file that cannot be read back.
var ErrBadState = errors.New("app: bad state file")

func loadState(dir string) (savedState, error) {
	var s savedState
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("app: read state: %w", err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return savedState{}, fmt.Errorf("%w %s: %v", ErrBadState, filepath.Join(dir, stateFile), err)
	}
	switch s.Pending {
	case "", "stream", "full":
	default:
		return savedState{}, fmt.Errorf("%w %s: unknown download mode %q", ErrBadState, filepath.Join(dir, stateFile), s.Pending)
	}
	if err := s.keptSettings.check(); err != nil {
		return savedState{}, fmt.Errorf("%w %s: %v (fix or delete the value there, or set it on the command line)", ErrBadState, filepath.Join(dir, stateFile), err)
	}
	return s, nil
}

func saveState(dir string, s savedState) error {
	if err := s.keptSettings.check(); err != nil {
		return fmt.Errorf("app: refusing to save a bad setting: %w", err)
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("app: encode state: %w", err)
	}
	// 0600: it may hold the API key.
	return writeFileAtomic(filepath.Join(dir, stateFile), append(b, '\n'), 0o600)
}

// RememberedAddress sets cfg's server address for the menu-bar app: the one
// given (--host/--port, DELTAFIN_HOST/DELTAFIN_PORT), which the app then
// remembers, or else the one it remembered from an earlier launch.
func RememberedAddress(cfg *Config) error {
	if cfg.Server.AddrGiven {
		return nil
	}
	s, err := loadState(cfg.DataDir)
	if err != nil {
		return err
	}
	if s.ServerHost != "" {
		cfg.Server.Host = s.ServerHost
	}
	if s.ServerPort > 0 && s.ServerPort <= 65535 {
		cfg.Server.Port = s.ServerPort
	}
	return nil
}

func (s savedState) mode() DownloadMode {
	switch s.Pending {
	case "stream":
		return ModeStream
	case "full":
		return ModeFull
	}
	return 0
}

func modeName(m DownloadMode) string {
	if m == 0 {
		return ""
	}
	return m.String()
}

// writeFileAtomic replaces path with data so a crash leaves the old file or
// the new one, creating the directory first.
func writeFileAtomic(path string, data []byte, perm fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("app: %w", err)
	}
	if err := atomicfile.WriteFile(path, data, perm); err != nil {
		return fmt.Errorf("app: %w", err)
	}
	return nil
}
