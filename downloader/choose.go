package downloader

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// DefaultHeadroom is the most free space an install leaves on the disk by
// default (decimal 100 GB, as the previous Deltafin planner), kept for a
// model K3's size.
const DefaultHeadroom = 100_000_000_000

// HeadroomFor is the free space an install of a model whose full size is
// size bytes leaves by default: a tenth of that, at least 1 GB and at most
// DefaultHeadroom. A fixed 100 GB refused a 3 MB model on a disk with 76 GB
// free; the margin is for the model's growth (stream → full, repairs) and
// the system's, so it scales with the model.
func HeadroomFor(size int64) int64 { return min(DefaultHeadroom, max(1_000_000_000, size/10)) }

// Choose decides the mode to install: requested Full or Stream must fit
// with headroom bytes left free; Auto takes Full when it fits, else Stream
// when it fits. When nothing fits the error (ErrNoSpace) names the exact
// amount to free. A headroom of 0 or less is HeadroomFor the full install.
func Choose(requested Mode, stream, full Totals, free, headroom int64) (Mode, error) {
	if headroom <= 0 {
		headroom = HeadroomFor(full.Total)
	}
	fits := func(t Totals) bool { return free-t.Missing() >= headroom }
	short := func(t Totals) int64 { return t.Missing() + headroom - free }
	switch requested {
	case Full:
		if fits(full) {
			return Full, nil
		}
		return "", fmt.Errorf("%w: free %s more for full mode (it downloads %s and leaves %s free; %s free now), or use --stream",
			ErrNoSpace, FormatBytesUp(short(full)), FormatBytes(full.Missing()), FormatBytes(headroom), FormatBytes(free))
	case Stream, Auto:
		if requested == Auto && fits(full) {
			return Full, nil
		}
		if fits(stream) {
			return Stream, nil
		}
		return "", fmt.Errorf("%w: free %s more for stream mode (it downloads %s and leaves %s free; %s free now)",
			ErrNoSpace, FormatBytesUp(short(stream)), FormatBytes(stream.Missing()), FormatBytes(headroom), FormatBytes(free))
	}
	return "", fmt.Errorf("downloader: unknown mode %q (stream, full or auto)", requested)
}

var units = []string{"B", "kB", "MB", "GB", "TB", "PB"}

// FormatBytes writes n in decimal units with one decimal (1.7 TB).
func FormatBytes(n int64) string { return formatBytes(n, math.Round) }

// FormatBytesUp rounds up to the unit shown, for amounts the user must free:
// freeing the printed amount is always enough.
func FormatBytesUp(n int64) string { return formatBytes(n, math.Ceil) }

func formatBytes(n int64, round func(float64) float64) string {
	if n < 1000 {
		return strconv.FormatInt(n, 10) + " B"
	}
	v, u := float64(n), 0
	for v >= 1000 && u < len(units)-1 {
		v /= 1000
		u++
	}
	if v >= 100 {
		return fmt.Sprintf("%.0f %s", round(v), units[u])
	}
	return fmt.Sprintf("%.1f %s", round(v*10)/10, units[u])
}

// ParseLayers parses a layer list such as "1-40,45" into a set.
func ParseLayers(s string) (map[int]bool, error) {
	out := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			return nil, fmt.Errorf("downloader: layer list %q has an empty item", s)
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("downloader: layer list %q: %q is not a layer number", s, lo)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("downloader: layer list %q: %q is not a range low-high", s, part)
			}
		}
		if b-a > 100000 {
			return nil, fmt.Errorf("downloader: layer list %q: range %q is too large", s, part)
		}
		for l := a; l <= b; l++ {
			out[l] = true
		}
	}
	return out, nil
}
