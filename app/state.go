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
// menu after a relaunch) and the overnight-warming switch. The downloader's
// presence maps remember the bytes; this remembers the user's intent.
type savedState struct {
	Pending     string `json:"pending_download,omitempty"` // "stream" or "full"
	Upgrade     bool   `json:"upgrade,omitempty"`
	WarmEnabled bool   `json:"warm_overnight,omitempty"`
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
	return s, nil
}

func saveState(dir string, s savedState) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("app: encode state: %w", err)
	}
	return writeFileAtomic(filepath.Join(dir, stateFile), append(b, '\n'), 0o644)
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
