package gpu

import (
	"errors"
	"fmt"

	"github.com/deltafin/deltafin/kernels"
	"github.com/deltafin/deltafin/kernels/shaders"
)

// Slots (device buffers) by role; calls are serialised, so they are reused.
const (
	slotW1, slotS1, slotW3, slotS3, slotW2, slotS2 = 0, 1, 2, 3, 4, 5
	slotX, slotG, slotU, slotY                     = 6, 7, 8, 9
)

func (b *Backend) MatVec(dst []float32, w kernels.Matrix, x []float32) { b.MatMul(dst, w, x, 1) }

// MatMul computes dst = W·x for n positions on the device; rows are split
// into blocks that fit one storage buffer.
func (b *Backend) MatMul(dst []float32, w kernels.Matrix, x []float32, n int) {
	mustShape(dst, w, x, n)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.matmul(dst, w, x, n); err != nil {
		b.fail(err)
		b.fallback.MatMul(dst, w, x, n)
	}
}

func mustShape(dst []float32, w kernels.Matrix, x []float32, n int) {
	if err := w.Validate(); err != nil {
		panic(fmt.Sprintf("gpu: MatMul: %v", err))
	}
	if n < 1 || len(x) < n*w.Cols || len(dst) < n*w.Rows {
		panic(fmt.Sprintf("gpu: MatMul %s [%d,%d] × %d: x has %d, dst has %d", w.DType, w.Rows, w.Cols, n, len(x), len(dst)))
	}
}

// fits reports whether every operand of W·x for n positions fits a binding.
func (b *Backend) fits(w kernels.Matrix, n int) bool {
	return len(w.Data) <= b.maxBuf() && 4*n*w.Cols <= b.maxBuf() && 4*n*w.Rows <= b.maxBuf()
}

// Tile shapes of mmtile.comp and mmbig.comp.
const (
	tileRows, tilePositions = 64, 32
	bigRows, bigPositions   = 128, 64
)

// mmBigMinGroups is the fewest workgroups of mmbig.comp a product must
// fill for it to run there rather than in mmtile.comp's smaller tiles:
// none by default. The two timed on the same shapes in one lease (an H100,
// by its own clock; kernels/README.md "Issue 33, eighth session"): a
// 12288×7168 BF16 product's shaders at 0.38 of the FMA peak in mmtile
// against 0.22 in mmbig at 256 and at 512 positions (INT8 0.40 against
// 0.23), a routed expert's FFN at 512 positions 0.27 against 0.15.
const mmBigMinGroups = 1 << 30

// matGrid picks the shader and workgroups for rows × n: one workgroup per
// row for a single position (matmul.comp), 128×64 tiles (mmbig.comp) for
// products large enough to fill the device with them, else 64×32 tiles
// (mmtile.comp); row tiles along x (the shaders loop past the dispatch
// limit), position tiles along y.
func (b *Backend) matGrid(rows, n int) (shader string, gx, gy int) {
	if n == 1 {
		gx, _ = b.grid(rows)
		return shaders.MatMul, gx, 1
	}
	minGroups := mmBigMinGroups
	if b.bigMin > 0 {
		minGroups = b.bigMin
	}
	if big := (rows + bigRows - 1) / bigRows; n > tilePositions && big*((n+bigPositions-1)/bigPositions) >= minGroups {
		gx, _ = b.grid(big)
		return shaders.MMBig, gx, (n + bigPositions - 1) / bigPositions
	}
	gx, _ = b.grid((rows + tileRows - 1) / tileRows)
	return shaders.MMTile, gx, (n + tilePositions - 1) / tilePositions
}

func matPush(w kernels.Matrix, rows, n, yRows, yOff int) []uint32 {
	return []uint32{uint32(rows), uint32(w.Cols), uint32(n), uint32(w.DType), uint32(yRows), uint32(yOff)}
}

// rowBlock is the rows of w one binding holds: MatMul's blocks, which
// are also the units a resident copy is kept (and preloaded) in.
func (b *Backend) rowBlock(w kernels.Matrix) int { return max(1, b.maxBuf()/(len(w.Data)/w.Rows)) }

func (b *Backend) matmul(dst []float32, w kernels.Matrix, x []float32, n int) (err error) {
	if 4*n*w.Cols > b.maxBuf() || 4*n*w.Rows > b.maxBuf() {
		return fmt.Errorf("%w: %d positions of [%d,%d] exceed a %d-byte buffer", ErrLimit, n, w.Rows, w.Cols, b.maxBuf())
	}
	resident := w.Key != 0 && int64(len(w.Data)+len(w.Scales)) <= b.resBudget()
	if resident {
		if p, cuts := b.pieceCuts(w.Rows, n); cuts != nil {
			return b.matmulShared(p, [][]float32{dst}, []kernels.Matrix{w}, x, n, cuts)
		}
	}
	block := b.rowBlock(w)
	// Streamed weights larger than a chunk go in pieces, each piece's
	// weights copied into one slot set while the other's call runs.
	p, chunk := b.pipeliner()
	if resident || len(w.Data)+len(w.Scales) <= chunk {
		p = nil
	}
	if p != nil {
		pieces := (len(w.Data) + len(w.Scales) + chunk - 1) / chunk
		block = min(block, ((w.Rows+pieces-1)/pieces+tileRows-1)/tileRows*tileRows)
		defer func() { err = errors.Join(err, settle(p)) }()
	}
	if err := b.putF32(slotX, x[:n*w.Cols]); err != nil {
		return err
	}
	if _, err := b.slot(slotY, 4*n*w.Rows); err != nil {
		return err
	}
	for i, r0 := 0, 0; r0 < w.Rows; i, r0 = i+1, r0+block {
		r1, set := min(w.Rows, r0+block), 0
		if p != nil {
			// The set's last piece (two calls ago) must be over
			// before its slots are written again.
			set = i % 2
			if err := p.Wait(set); err != nil {
				return err
			}
		}
		wd, ws, err := b.weights(w, r0, r1, at(slotW1, set), at(slotS1, set))
		if err != nil {
			return err
		}
		if err := b.beginFrame(p, set); err != nil {
			return err
		}
		shader, gx, gy := b.matGrid(r1-r0, n)
		if err := b.dispatch(shader, []int{wd, ws, slotX, slotY}, matPush(w, r1-r0, n, w.Rows, r0), gx, gy, 1); err != nil {
			return err
		}
		if r1 == w.Rows {
			if err := b.dev.ToHost(slotY, 4*n*w.Rows); err != nil {
				return err
			}
		}
		if p != nil && r1 < w.Rows {
			err = b.submitAsync(p)
		} else {
			err = b.dev.Submit()
		}
		if err != nil {
			return err
		}
	}
	return b.getF32(slotY, dst[:n*w.Rows])
}

// ExpertFFN computes dst = W2·act(W1·x, W3·x) in one submission: the three
// products and the activation stay on the device. Its shapes are checked
// without allocating (checkExpert): before, three zeroed n×inter slices a
// call, made to reuse mustShape, were a share of every prompt expert's
// time on the GPU.
func (b *Backend) ExpertFFN(dst []float32, e kernels.Expert, act kernels.Activation, x []float32, n int) {
	b.checkExpert(dst, e, x, n)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.expertFFN(dst, e, act, x, n); err != nil {
		b.fail(err)
		b.fallback.ExpertFFN(dst, e, act, x, n)
	}
}

func (b *Backend) expertFFN(dst []float32, e kernels.Expert, act kernels.Activation, x []float32, n int) error {
	inter, dim := e.W1.Rows, e.W1.Cols
	if !b.fits(e.W1, n) || !b.fits(e.W3, n) || !b.fits(e.W2, n) {
		return fmt.Errorf("%w: expert [%d,%d] × %d exceeds a %d-byte buffer", ErrLimit, inter, dim, n, b.maxBuf())
	}
	var ids [6]int
	for i, p := range []struct {
		m            kernels.Matrix
		data, scales int
	}{{e.W1, slotW1, slotS1}, {e.W3, slotW3, slotS3}, {e.W2, slotW2, slotS2}} {
		var err error
		if ids[2*i], ids[2*i+1], err = b.weights(p.m, 0, p.m.Rows, p.data, p.scales); err != nil {
			return err
		}
	}
	w1, s1, w3, s3, w2, s2 := ids[0], ids[1], ids[2], ids[3], ids[4], ids[5]
	if err := b.putF32(slotX, x[:n*dim]); err != nil {
		return err
	}
	if err := b.startFFN(nil, 0, n, inter, dim); err != nil {
		return err
	}
	shI, gi, gyi := b.matGrid(inter, n)
	shD, gd, gyd := b.matGrid(dim, n)
	ax, ay := b.grid((n*inter + shaders.LocalSize - 1) / shaders.LocalSize)
	steps := []step{
		{shI, []int{w1, s1, slotX, slotG}, matPush(e.W1, inter, n, inter, 0), gi, gyi},
		{shI, []int{w3, s3, slotX, slotU}, matPush(e.W3, inter, n, inter, 0), gi, gyi},
		{shaders.Act, []int{slotG, slotU}, []uint32{uint32(n * inter), uint32(act.Kind), f32bits(act.Beta), f32bits(act.LinearBeta)}, ax, ay},
		{shD, []int{w2, s2, slotG, slotY}, matPush(e.W2, dim, n, dim, 0), gd, gyd},
	}
	if err := b.run(steps, slotY, 4*n*dim); err != nil {
		return err
	}
	return b.getF32(slotY, dst[:n*dim])
}

// A step is one dispatch of a call.
type step struct {
	shader string
	slots  []int
	push   []uint32
	gx, gy int
}

// run records steps and ends the call with the first n bytes of slot out
// copied back to the host, then runs it and waits.
func (b *Backend) run(steps []step, out, n int) error { return b.record(steps, out, n, b.dev.Submit) }

// record is run with the call ended by submit (Submit, or a Pipeliner's
// SubmitAsync).
func (b *Backend) record(steps []step, out, n int, submit func() error) error {
	for _, s := range steps {
		if err := b.dispatch(s.shader, s.slots, s.push, s.gx, s.gy, 1); err != nil {
			return err
		}
	}
	if err := b.dev.ToHost(out, n); err != nil {
		return err
	}
	return submit()
}

// startFFN sizes set's intermediates and output of an expert FFN over n
// positions and begins its call (on frame set of p, unless p is nil).
func (b *Backend) startFFN(p Pipeliner, set, n, inter, dim int) error {
	for _, s := range []struct{ slot, bytes int }{{slotG, 4 * n * inter}, {slotU, 4 * n * inter}, {slotY, 4 * n * dim}} {
		if _, err := b.slot(at(s.slot, set), s.bytes); err != nil {
			return err
		}
	}
	return b.beginFrame(p, set)
}
