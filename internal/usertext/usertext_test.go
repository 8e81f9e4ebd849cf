package usertext

import (
	"errors"
	"fmt"
	"testing"
)

func TestStrip(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"app: open model: engine: no weights", "open model: no weights"},
		{"downloader: downloader: hub unreachable", "hub unreachable"},
		{"experts: expert store closed", "expert store closed"},
		{"the application: ready", "the application: ready"},
		{"vulkan: no usable device", "vulkan: no usable device"}, // a backend's name, which users read
		{"no prefix", "no prefix"},
	} {
		if got := Strip(c.in); got != c.want {
			t.Errorf("Strip(%q) = %q, want %q", c.in, got, c.want)
		}
		if Prefixed(c.want) {
			t.Errorf("Prefixed(%q) after Strip", c.want)
		}
	}
	if Of(nil) != "" {
		t.Error("Of(nil) is not empty")
	}
	err := fmt.Errorf("app: setup: %w", errors.New("store: locked"))
	if got := Of(err); got != "setup: locked" {
		t.Errorf("Of = %q", got)
	}
}
