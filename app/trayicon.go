package app

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
)

// progressIcon is the menu-bar icon with a progress bar along its bottom
// edge, pct of it filled: what a Linux panel shows while Deltafin downloads
// or warms (most StatusNotifierItem hosts draw the icon and no title).
func progressIcon(icon []byte, pct int) ([]byte, error) {
	src, err := png.Decode(bytes.NewReader(icon))
	if err != nil {
		return nil, fmt.Errorf("app: tray icon: %w", err)
	}
	b := src.Bounds()
	img := image.NewNRGBA(b)
	draw.Draw(img, b, src, b.Min, draw.Src)
	h := max(3, b.Dy()/5)
	bar := image.Rect(b.Min.X, b.Max.Y-h, b.Max.X, b.Max.Y)
	draw.Draw(img, bar, image.NewUniform(color.NRGBA{R: 0x80, G: 0x80, B: 0x80, A: 0x60}), image.Point{}, draw.Src)
	filled := bar
	filled.Max.X = bar.Min.X + fill(bar.Dx(), pct)
	draw.Draw(img, filled, image.NewUniform(color.NRGBA{R: 0x2f, G: 0x80, B: 0xed, A: 0xff}), image.Point{}, draw.Src)
	var out bytes.Buffer
	if err := png.Encode(&out, img); err != nil {
		return nil, fmt.Errorf("app: tray icon: %w", err)
	}
	return out.Bytes(), nil
}

// fill is the pixels of a bar w wide that pct per cent fills, rounded up:
// on a 32-pixel icon a download's first 3% (6 GB of a stream install, many
// minutes) rounded down to an empty bar, as if nothing were happening.
func fill(w, pct int) int {
	pct = min(max(pct, 0), 100)
	return (w*pct + 99) / 100
}
