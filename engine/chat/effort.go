package chat

import (
	"fmt"
	"strings"
)

// NearestEffort maps a client's effort name to K3's: "none" turns
// thinking off (thinking false, effort ""); minimal and low are low;
// medium and high are high; xhigh and max are max. Case and surrounding
// space are ignored.
//
// K3's instruction text names low, medium, high and max, but the
// official renderer (encoding_k3.py) accepts only low, high and max, so
// "medium" (OpenAI's default effort, what most clients send when the user
// chose nothing) cannot be passed through. It becomes high: medium sits
// between low and high, and of the two high stays nearer K3's own default
// (max) and never gives a client less thinking than the level it named.
// OpenAI's "minimal" and "xhigh" go to the ends of K3's scale.
func NearestEffort(name string) (effort string, thinking bool, err error) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "none":
		return "", false, nil
	case "minimal", "low":
		return "low", true, nil
	case "medium", "high":
		return "high", true, nil
	case "xhigh", "max":
		return "max", true, nil
	}
	return "", false, fmt.Errorf("%w %q: use none, minimal, low, medium, high, xhigh or max", ErrEffort, name)
}
