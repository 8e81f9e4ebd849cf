package app

import (
	"bytes"
	"image/png"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/icons"
)

// TestProgressIconShowsAnyProgress: the bar along the icon's bottom edge
// is empty at 0%, shows at least one pixel from 1% (a stream install's
// first per cent is 2 GB), and is full at 100%.
func TestProgressIconShowsAnyProgress(t *testing.T) {
	filled := func(pct int) int {
		b, err := progressIcon(icons.MenuBar, pct)
		require.NoError(t, err)
		img, err := png.Decode(bytes.NewReader(b))
		require.NoError(t, err)
		r := img.Bounds()
		n := 0
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, ca := img.At(x, r.Max.Y-1).RGBA()
			if cr>>8 == 0x2f && cg>>8 == 0x80 && cb>>8 == 0xed && ca>>8 == 0xff {
				n++
			}
		}
		return n
	}
	w := 32 // icons.MenuBar's width
	require.Zero(t, filled(0))
	require.Equal(t, 1, filled(1))
	require.Equal(t, 1, filled(3))
	require.Equal(t, w/2, filled(50))
	require.Equal(t, w, filled(100))
	require.Equal(t, w, filled(140), "clamped")
	_, err := progressIcon([]byte("not a png"), 10)
	require.ErrorContains(t, err, "tray icon")
}
