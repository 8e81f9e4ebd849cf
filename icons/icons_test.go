package icons

import (
	"bytes"
	"flag"
	"image"
	"image/color"
	"image/png"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the icon files")

// delta draws the logo, a triangle outline (Δ), at size×size pixels with
// 8×8 supersampling for smooth edges, in colour c.
func delta(size int, c color.NRGBA) *image.NRGBA {
	type pt struct{ x, y float64 }
	outer := [3]pt{{0.5, 0.08}, {0.04, 0.9}, {0.96, 0.9}}
	cx, cy := (outer[0].x+outer[1].x+outer[2].x)/3, (outer[0].y+outer[1].y+outer[2].y)/3
	var inner [3]pt
	for i, p := range outer {
		inner[i] = pt{cx + (p.x-cx)*0.45, cy + (p.y-cy)*0.45}
	}
	inside := func(t [3]pt, x, y float64) bool {
		side := func(a, b pt) float64 { return (b.x-a.x)*(y-a.y) - (b.y-a.y)*(x-a.x) }
		d1, d2, d3 := side(t[0], t[1]), side(t[1], t[2]), side(t[2], t[0])
		return (d1 >= 0 && d2 >= 0 && d3 >= 0) || (d1 <= 0 && d2 <= 0 && d3 <= 0)
	}
	const ss = 8
	img := image.NewNRGBA(image.Rect(0, 0, size, size))
	for py := range size {
		for px := range size {
			n := 0
			for sy := range ss {
				for sx := range ss {
					x := (float64(px) + (float64(sx)+0.5)/ss) / float64(size)
					y := (float64(py) + (float64(sy)+0.5)/ss) / float64(size)
					if inside(outer, x, y) && !inside(inner, x, y) {
						n++
					}
				}
			}
			if n > 0 {
				img.SetNRGBA(px, py, color.NRGBA{c.R, c.G, c.B, uint8(n * 255 / (ss * ss))})
			}
		}
	}
	return img
}

func encode(t *testing.T, img image.Image) []byte {
	var b bytes.Buffer
	require.NoError(t, (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&b, img))
	return b.Bytes()
}

func TestIconsAreGenerated(t *testing.T) {
	black, grey := color.NRGBA{0, 0, 0, 255}, color.NRGBA{0x80, 0x80, 0x80, 255}
	for _, tc := range []struct {
		file string
		size int
		c    color.NRGBA
		have []byte
	}{
		{"menubarTemplate.png", 16, black, MenuBarTemplate},
		{"menubarTemplate@2x.png", 32, black, MenuBarTemplate2x},
		{"menubar.png", 32, grey, MenuBar},
	} {
		t.Run(tc.file, func(t *testing.T) {
			want := encode(t, delta(tc.size, tc.c))
			if *update {
				require.NoError(t, os.WriteFile(tc.file, want, 0o644))
				return
			}
			require.Equal(t, want, tc.have, "%s is stale: go test ./icons -update", tc.file)
		})
	}
}

// TestTemplatesAreMonochromeWithAlpha checks what macOS needs of a template
// image: every pixel black, the shape only in alpha, and some of both.
func TestTemplatesAreMonochromeWithAlpha(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
		size int
	}{{"1x", MenuBarTemplate, 16}, {"2x", MenuBarTemplate2x, 32}} {
		t.Run(tc.name, func(t *testing.T) {
			img, err := png.Decode(bytes.NewReader(tc.data))
			require.NoError(t, err)
			require.Equal(t, image.Rect(0, 0, tc.size, tc.size), img.Bounds())
			opaque, clear := 0, 0
			for y := range tc.size {
				for x := range tc.size {
					c := color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA)
					if c.A == 0 {
						clear++
						continue
					}
					opaque++
					require.Equal(t, [3]uint8{0, 0, 0}, [3]uint8{c.R, c.G, c.B}, "pixel %d,%d", x, y)
				}
			}
			require.Positive(t, opaque)
			require.Positive(t, clear)
		})
	}
}
