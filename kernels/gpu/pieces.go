package gpu

// A product over weights the device keeps (resident.go) moves only its
// activations: the positions' inputs to the device and their outputs back,
// both across the bus and through the host's copies into and out of the
// slots. As one call these waited for each other and for the shaders: on
// an H100 a resident 12288×7168 BF16 product at 256 positions ran its
// shaders at 0.38 of the FMA peak and the call at 0.24, and in a
// 16,384-token prompt the spine's products took as long on the GPU as the
// experts (kernels/README.md, "Issue 33, eleventh session"). So such a
// product runs in pieces of positions, each one call on the Pipeliner's
// frames: the host copies a piece's inputs in while the device runs the
// piece before, whose outputs the host copies out once it is over, and the
// device copies each piece's inputs across under the shaders of the one
// before (the transfer queue, vk.c). Every output is the same shader's
// FMA chain over its columns, whichever piece holds its position, so the
// bits are the whole call's.

// Pieces' shapes: a piece fills at least pieceMinGroups workgroups of the
// product's tiles (a piece that leaves the GPU's cores idle costs more
// than the copies it hides), and a product is at most maxPieces of them (a
// piece's call has a fixed cost, and the first piece's copy in and the
// last one's copy out are not hidden). 256, not 512: on an H100 a
// 12288×7168 product at 256 positions ran its four pieces of 64 positions
// (384 workgroups each) at 0.27–0.28 of the FMA peak as a call, their
// shaders at 0.38, against 0.25 and 0.34 for three of 96 (576 workgroups,
// likely a second wave of a few); kernels/README.md, "Issue 33, twelfth
// session". Only products under 8 pieces' positions change: longer ones
// are 8 pieces either way. Each boundary between two pieces leaves the
// compute queue idle 60–100 µs on an H100 though the next piece's inputs
// are already there (the calls' spans, thirteenth session): half pieces
// at the ends, to shorten what nothing hides, added a boundary and ran
// slower. On the fourteenth session's H100s a boundary whose inputs were
// on time was 73–110 µs: the compute queue's turn from one submission to
// the next (12–76) and the call's preamble, mostly its two query resets
// (44–83 µs with four products, 5–38 once the host resets the queries);
// with one product their slower hosts were late with the next piece's
// inputs at half the boundaries.
const (
	pieceMinGroups = 256
	maxPieces      = 8
)

// SetPositionPiece changes the positions of a resident product's pieces
// (0: by pieceMinGroups and maxPieces; negative: one call, as before); the
// tests set a few positions to hold small shapes' pieces to the whole
// call, and a benchmark can time the two against each other.
func (b *Backend) SetPositionPiece(n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.piece = n
}

// pieceCuts returns the Pipeliner and the positions where a resident
// product's pieces start, with n at the end (cutPositions), or nil cuts
// where it runs as one call: no Pipeliner, pipelining off
// (SetPipelineChunk), or pieces off.
func (b *Backend) pieceCuts(rows, n int) (Pipeliner, []int) {
	p, _ := b.pipeliner()
	if p == nil || b.piece < 0 {
		return nil, nil
	}
	return p, cutPositions(rows, n, b.piece)
}

// cutPositions cuts n positions of a product of rows rows into pieces of
// piece positions (0: by pieceMinGroups and maxPieces, whole tiles),
// returning where each starts and n; nil for fewer than two pieces. No
// piece is a single position, which the device computes with another
// shader (matmul.comp) and other bits: a last one joins the piece before.
func cutPositions(rows, n, piece int) []int {
	if piece == 0 {
		tiles := (rows + tileRows - 1) / tileRows
		piece = max((pieceMinGroups+tiles-1)/tiles*tilePositions, (n+maxPieces-1)/maxPieces)
		piece = (piece + tilePositions - 1) / tilePositions * tilePositions
	}
	piece = max(piece, 2)
	if 2*piece > n {
		return nil
	}
	var cuts []int
	for t := 0; t < n; t += piece {
		cuts = append(cuts, t)
	}
	if n-cuts[len(cuts)-1] == 1 {
		cuts = cuts[:len(cuts)-1]
	}
	return append(cuts, n)
}
