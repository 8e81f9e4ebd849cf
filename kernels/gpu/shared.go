package gpu

import (
	"errors"
	"fmt"

	"github.com/deltafin/deltafin/kernels"
	"github.com/deltafin/deltafin/kernels/shaders"
)

// Products over one input (kernels.MatMulShared): the activations of a
// layer's projections (the KDA's q, k, v, gate and decay over the
// normalised hidden state) cross the bus once a piece of positions, every
// product's dispatches run back to back on them in one call, and their
// results come back by the copies that end it, beside the next piece's
// shaders. Each product's outputs are the FMA chains MatMul gives, so the
// bits are those of the products one by one. A product over resident
// weights alone is the case of one (matmul's pieces). On an H100, four
// 12288×7168 BF16 products over 256 positions ran at 0.31–0.32 of the
// FMA peak as a call, one alone at 0.27 (their shaders at 0.37–0.38):
// four products' shaders share one copy in of x and the fixed ends of a
// piece's call (kernels/README.md, "Issue 33, thirteenth session").

// sharedMax is the products a call takes: as many as its copies back
// (DFVK_BACKS).
const sharedMax = 8

// sharedOut is the slot of product j's outputs (j < sharedMax): the
// product's own (slotY), then slots no product call uses (the expert
// FFN's intermediates, and 11 to 15, past slotTab).
func sharedOut(j int) int {
	switch j {
	case 0:
		return slotY
	case 1:
		return slotG
	case 2:
		return slotU
	}
	return 8 + j
}

// MatMulShared computes dst[j] = ws[j]·x for the n positions of x on the
// device, up to sharedMax products a call, when every matrix is kept
// there (a Key, within the resident budget, all of them at once) and n > 1;
// otherwise, and for what the device cannot take, as MatMul each.
func (b *Backend) MatMulShared(dst [][]float32, ws []kernels.Matrix, x []float32, n int) {
	for j, w := range ws {
		mustShape(dst[j], w, x, n)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for lo := 0; lo < len(ws); lo += sharedMax {
		hi := min(len(ws), lo+sharedMax)
		if err := b.matmulSharedCall(dst[lo:hi], ws[lo:hi], x, n); err != nil {
			b.fail(err)
			for j := lo; j < hi; j++ {
				b.fallback.MatMul(dst[j], ws[j], x, n)
			}
		}
	}
}

// matmulSharedCall runs up to sharedMax products over x: as one call
// in pieces of positions (pieceCuts over the widest product: its tiles
// decide how many positions fill the device) when every matrix is resident
// together, else one by one.
func (b *Backend) matmulSharedCall(dst [][]float32, ws []kernels.Matrix, x []float32, n int) error {
	need, rows := int64(0), 0
	shared := n > 1
	for _, w := range ws {
		need += int64(len(w.Data) + len(w.Scales))
		rows = max(rows, w.Rows)
		shared = shared && w.Key != 0 && b.fits(w, n)
	}
	if !shared || need > b.resBudget() {
		for j, w := range ws {
			if err := b.matmul(dst[j], w, x, n); err != nil {
				return err
			}
		}
		return nil
	}
	// Every block resident before the first is recorded: a block copied
	// in later could evict one a recorded dispatch binds.
	for _, w := range ws {
		block := b.rowBlock(w)
		for r0 := 0; r0 < w.Rows; r0 += block {
			if _, _, err := b.weights(w, r0, min(w.Rows, r0+block), slotW1, slotS1); err != nil {
				return err
			}
		}
	}
	p, cuts := b.pieceCuts(rows, n)
	if cuts == nil {
		cuts = []int{0, n}
	}
	return b.matmulShared(p, dst, ws, x, n, cuts)
}

// matmulShared computes dst[j] = ws[j]·x for the n positions of x, every
// ws[j] resident, in the pieces cuts gives (where each starts, and n),
// each piece one call: x's piece copied in once, every product's
// dispatches, every product's results copied back. With p, the pieces
// alternate its two frames and slot sets, the host filling the next
// piece's inputs and then collecting the results of the one before while
// the device runs; without, each call runs alone. Each product's shader
// is the one its whole call would take (matGrid over n).
//
// The inputs go first because the host then fills them while the device
// still runs the piece before, rather than after its results are in: on
// the fourteenth session's H100 hosts, collecting one 12288-row product's
// results (3.1 MB a piece of 64 positions) and then filling the next
// piece's inputs (1.8 MB) took about as long as a piece's shaders, and
// the next piece's inputs were late at half the boundaries
// (kernels/README.md, "Issue 33, fourteenth session"). So a piece's
// inputs take the slot of the piece three before it (inputSlot), which no
// running call binds: the two frames run the two pieces before.
func (b *Backend) matmulShared(p Pipeliner, dst [][]float32, ws []kernels.Matrix, x []float32, n int, cuts []int) (err error) {
	if len(ws) > sharedMax {
		return fmt.Errorf("%w: %d products over one input, at most %d a call", ErrLimit, len(ws), sharedMax)
	}
	defer func() { err = errors.Join(err, settle(p)) }()
	cols := ws[0].Cols
	fill := func(i int) error {
		return b.putF32(inputSlot(p, i), x[cuts[i]*cols:cuts[i+1]*cols])
	}
	collect := func(set, t0, t1 int) error {
		if p != nil {
			if err := p.Wait(set); err != nil {
				return err
			}
		}
		pairs := make([]copyPair, len(ws))
		for j, w := range ws {
			d := f32bytes(dst[j][t0*w.Rows : t1*w.Rows])
			m, err := b.slot(at(sharedOut(j), set), len(d))
			if err != nil {
				return err
			}
			pairs[j] = copyPair{d, m}
		}
		parallelCopies(pairs)
		return nil
	}
	type blk struct{ j, r0, r1, data, scales int }
	if err := fill(0); err != nil {
		return err
	}
	for i := 0; i+1 < len(cuts); i++ {
		// With p, the set's piece before (two ago) was collected when
		// the piece after it had been submitted.
		t0, t1, set := cuts[i], cuts[i+1], i%2
		if p == nil {
			set = 0
		}
		np := t1 - t0
		last := i+2 == len(cuts)
		var blocks []blk
		for j, w := range ws {
			if _, err := b.slot(at(sharedOut(j), set), 4*np*w.Rows); err != nil {
				return err
			}
			block := b.rowBlock(w)
			for r0 := 0; r0 < w.Rows; r0 += block {
				r1 := min(w.Rows, r0+block)
				wd, wsc, err := b.weights(w, r0, r1, at(slotW1, set), at(slotS1, set))
				if err != nil {
					return err
				}
				blocks = append(blocks, blk{j, r0, r1, wd, wsc})
			}
		}
		if err := b.beginFrame(p, set); err != nil {
			return err
		}
		for _, k := range blocks {
			w := ws[k.j]
			shader, gx, _ := b.matGrid(k.r1-k.r0, n)
			h := tilePositions
			if shader == shaders.MMBig {
				h = bigPositions
			}
			if err := b.dispatch(shader, []int{k.data, k.scales, inputSlot(p, i), at(sharedOut(k.j), set)}, matPush(w, k.r1-k.r0, np, w.Rows, k.r0), gx, (np+h-1)/h, 1); err != nil {
				return err
			}
		}
		for j, w := range ws {
			if err := b.dev.ToHost(at(sharedOut(j), set), 4*np*w.Rows); err != nil {
				return err
			}
		}
		if p == nil {
			if err := b.dev.Submit(); err != nil {
				return err
			}
		} else if err := b.submitAsync(p); err != nil {
			return err
		}
		// Without p the call is over and its slot free again.
		if !last {
			if err := fill(i + 1); err != nil {
				return err
			}
		}
		// Then the results: without p this piece's, with p the one
		// before's.
		if p == nil {
			if err := collect(set, t0, t1); err != nil {
				return err
			}
		} else if i > 0 {
			if err := collect(1-set, cuts[i-1], t0); err != nil {
				return err
			}
		}
	}
	if p == nil {
		return nil
	}
	last := len(cuts) - 2
	return collect(last%2, cuts[last], cuts[last+1])
}

// inputSlot is the slot of piece i's inputs in matmulShared: with p, three
// in turn (set 0's and set 1's slotX, then set 0's slotTab, which no
// product uses), so that the host fills a piece's inputs while both
// frames still run the two pieces before it; without, one.
func inputSlot(p Pipeliner, i int) int {
	if p == nil {
		return slotX
	}
	switch i % 3 {
	case 0:
		return at(slotX, 0)
	case 1:
		return at(slotX, 1)
	}
	return at(slotTab, 0)
}
