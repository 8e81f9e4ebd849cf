package gpu

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// How a resident product's positions are cut: whole tiles filling the
// GPU, at most maxPieces, never a piece of one position, nothing for
// fewer than two pieces.
func TestCutPositions(t *testing.T) {
	for _, c := range []struct {
		rows, n, piece int
		want           []int
	}{
		// 12288 rows: 192 row tiles, 2 position tiles (64) fill 256 groups.
		{12288, 256, 0, []int{0, 64, 128, 192, 256}},
		{12288, 127, 0, nil},
		{12288, 128, 0, []int{0, 64, 128}},
		{12288, 191, 0, []int{0, 64, 128, 191}},
		// 16,384 positions: eight pieces of 2,048.
		{12288, 16384, 0, []int{0, 2048, 4096, 6144, 8192, 10240, 12288, 14336, 16384}},
		// A narrow product needs more positions to fill the GPU: 3584
		// rows are 56 tiles, 5 position tiles (160 positions).
		{3584, 1024, 0, []int{0, 160, 320, 480, 640, 800, 960, 1024}},
		{3584, 319, 0, nil},
		// Set by hand (the tests): the last position joins the piece
		// before; a piece is at least two positions.
		{300, 7, 2, []int{0, 2, 4, 7}},
		{300, 9, 3, []int{0, 3, 6, 9}},
		{300, 5, 1, []int{0, 2, 5}},
		{300, 3, 2, nil},
	} {
		require.Equal(t, c.want, cutPositions(c.rows, c.n, c.piece), "%d rows, %d positions, pieces of %d", c.rows, c.n, c.piece)
	}
}

// pipelinerStub is a Pipeliner that is never called: inputSlot only asks
// whether there is one.
type pipelinerStub struct{ Pipeliner }

// A piece's inputs are filled while the two pieces before it run: their
// slot is neither of those pieces' inputs nor any slot a piece of the
// products over one input writes (either set's outputs).
func TestInputSlotIsFreeWhileTwoPiecesRun(t *testing.T) {
	var p pipelinerStub
	outs := map[int]bool{}
	for set := range 2 {
		for j := range sharedMax {
			outs[at(sharedOut(j), set)] = true
		}
	}
	for i := range 12 {
		s := inputSlot(p, i)
		require.False(t, outs[s], "piece %d's inputs in an output slot", i)
		for back := 1; back <= min(i, 2); back++ {
			require.NotEqual(t, inputSlot(p, i-back), s, "piece %d's inputs in piece %d's slot, still running", i, i-back)
		}
	}
	require.Equal(t, slotX, inputSlot(nil, 7), "without a Pipeliner, one slot")
}
