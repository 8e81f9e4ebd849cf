package gpu

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/deltafin/deltafin/kernels"
	"github.com/deltafin/deltafin/kernels/shaders"
)

// slotTab holds a group call's table of experts (mmgroup.comp's tab).
const slotTab = 10

var _ kernels.ExpertGrouper = (*Backend)(nil)

// ExpertGroupFFN runs a prompt's experts of one shape, each over its own
// positions, with every product one dispatch over all of them
// (mmgroup.comp) in one submission: alone, each expert's call waited for
// its copies, its submission and its results before the next began. (On
// the H200 the gain as a kernel is small, 2-27% for 8 experts of 256
// positions, since a streamed expert's call is mostly its operands
// crossing; kernels/README.md.) Experts the device
// keeps resident (keyed), shapes mmgroup cannot stage (rows that are not
// whole words), single positions (ExpertFFN's matmul.comp sums a row
// across a workgroup, the tiles in one chain: other bits) and groups of
// one run one by one (ExpertFFN); the rest are cut into runs whose operands
// fit one binding.
func (b *Backend) ExpertGroupFFN(dst [][]float32, es []kernels.Expert, act kernels.Activation, x [][]float32, ns []int) {
	for i, e := range es {
		b.checkExpert(dst[i], e, x[i], ns[i])
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	// Pipelined, a run of experts is cut into batches of about a chunk of
	// weights; a batch's call runs while the next batch is staged in the
	// other slot set, and its results are collected while that one runs.
	p, chunk := b.pipeliner()
	cpu := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			b.fallback.ExpertFFN(dst[i], es[i], act, x[i], ns[i])
		}
	}
	var prev *flight // the batch whose call runs
	finish := func() {
		if prev == nil {
			return
		}
		f := prev
		prev = nil
		err := p.Wait(f.set)
		if err == nil {
			err = f.collect()
		}
		if err != nil {
			b.fail(err)
			cpu(f.lo, f.hi)
		}
	}
	for lo := 0; lo < len(es); {
		hi := b.groupEnd(es, ns, lo, chunk)
		if hi == lo+1 || p == nil {
			finish()
			var err error
			if hi == lo+1 {
				err = b.expertFFN(dst[lo], es[lo], act, x[lo], ns[lo])
			} else {
				var f *flight
				if f, err = b.expertGroup(nil, 0, dst[lo:hi], es[lo:hi], act, x[lo:hi], ns[lo:hi]); err == nil {
					err = f.collect()
				}
			}
			if err != nil {
				b.fail(err)
				cpu(lo, hi)
			}
			lo = hi
			continue
		}
		set := 0
		if prev != nil {
			set = 1 - prev.set
		}
		f, err := b.expertGroup(p, set, dst[lo:hi], es[lo:hi], act, x[lo:hi], ns[lo:hi])
		finish()
		if err != nil {
			b.fail(errors.Join(err, settle(p)))
			cpu(lo, hi)
		} else {
			f.lo, f.hi = lo, hi
			prev = f
		}
		lo = hi
	}
	finish()
}

// A flight is a group call submitted: collect copies its results out once
// its frame is over.
type flight struct {
	set, lo, hi int
	collect     func() error
}

// checkExpert panics on an expert whose shapes do not chain or operands
// that are too short (a caller's bug, as in kernels' CPU backends).
func (b *Backend) checkExpert(dst []float32, e kernels.Expert, x []float32, n int) {
	inter, dim := e.W1.Rows, e.W1.Cols
	if e.W3.Rows != inter || e.W3.Cols != dim || e.W2.Rows != dim || e.W2.Cols != inter {
		panic(fmt.Sprintf("gpu: ExpertFFN shapes W1 [%d,%d] W3 [%d,%d] W2 [%d,%d]",
			e.W1.Rows, e.W1.Cols, e.W3.Rows, e.W3.Cols, e.W2.Rows, e.W2.Cols))
	}
	if n < 1 || len(x) < n*dim || len(dst) < n*dim {
		panic(fmt.Sprintf("gpu: ExpertFFN [%d,%d] × %d: x has %d, dst has %d", inter, dim, n, len(x), len(dst)))
	}
	for _, m := range []kernels.Matrix{e.W1, e.W3, e.W2} {
		if err := m.Validate(); err != nil {
			panic(fmt.Sprintf("gpu: ExpertFFN: %v", err))
		}
	}
}

// groupable reports whether mmgroup.comp can stage m: whole-word rows, as
// mmstage.glsl's fastStage, and not kept on the device.
func groupable(m kernels.Matrix) bool {
	return m.Key == 0 && m.DType >= kernels.BF16 && m.DType <= kernels.MXFP4 && m.Cols%32 == 0
}

// sameMatrix reports whether m and o have one type, shape and size.
func sameMatrix(m, o kernels.Matrix) bool {
	return m.DType == o.DType && m.Rows == o.Rows && m.Cols == o.Cols && len(m.Data) == len(o.Data) && len(m.Scales) == len(o.Scales)
}

// words is n bytes rounded up to whole 4-byte words, in words.
func words(n int) int { return (n + 3) / 4 }

// groupEnd is the end of the run of experts from lo that one group call
// takes: those of es[lo]'s shapes whose concatenated operands fit one
// binding each, and (limit > 0) whose weights are at most limit bytes
// beyond the first two; lo+1 when es[lo] cannot be grouped.
func (b *Backend) groupEnd(es []kernels.Expert, ns []int, lo, limit int) int {
	a := es[lo]
	if !groupable(a.W1) || !groupable(a.W3) || !groupable(a.W2) || ns[lo] < 2 {
		return lo + 1
	}
	inter, dim := a.W1.Rows, a.W1.Cols
	per := 4 * max(words(len(a.W1.Data)), words(len(a.W2.Data)), words(len(a.W1.Scales)), words(len(a.W2.Scales)))
	weight := len(a.W1.Data) + len(a.W1.Scales) + len(a.W3.Data) + len(a.W3.Scales) + len(a.W2.Data) + len(a.W2.Scales)
	hi, n, tiles := lo, 0, 0
	for ; hi < len(es); hi++ {
		e := es[hi]
		if !sameMatrix(e.W1, a.W1) || !sameMatrix(e.W3, a.W3) || !sameMatrix(e.W2, a.W2) || e.W1.Key|e.W2.Key|e.W3.Key != 0 || ns[hi] < 2 {
			break
		}
		k, t := hi-lo+1, max(tiles, (ns[hi]+tilePositions-1)/tilePositions)
		if k*per > b.maxBuf() || 4*(n+ns[hi])*max(inter, dim) > b.maxBuf() || k*t > b.dev.MaxGroups() {
			break
		}
		if limit > 0 && k > 2 && k*weight > limit {
			break
		}
		n, tiles = n+ns[hi], t
	}
	return max(hi, lo+1)
}

// putGroup copies each part into slot i, part j at word j·stride, and marks
// the slot for the device.
func (b *Backend) putGroup(i int, parts [][]byte, stride int) error {
	m, err := b.dev.Slot(i, max(4*stride*len(parts), 4))
	if err != nil {
		return err
	}
	pairs := make([]copyPair, len(parts))
	for j, p := range parts {
		pairs[j] = copyPair{m[4*stride*j:], p}
	}
	parallelCopies(pairs)
	if stride > 0 {
		b.pending = append(b.pending, pend{i, 4 * stride * len(parts)})
	}
	return nil
}

// expertGroup stages es (groupable, one shape; their operands fit a
// binding) in slot set set and submits them as one call: W1 and W3 over
// every expert's rows of x, the activation, W2, each one dispatch; x, the
// intermediates and y are the experts' positions one after another. With p
// the call runs on frame set and expertGroup returns at once; the flight's
// collect, once the frame is over, copies the results into dst.
func (b *Backend) expertGroup(p Pipeliner, set int, dst [][]float32, es []kernels.Expert, act kernels.Activation, x [][]float32, ns []int) (*flight, error) {
	a := es[0]
	inter, dim := a.W1.Rows, a.W1.Cols
	starts := make([]int, len(es)+1) // expert j's positions: starts[j] .. starts[j+1]
	tiles := 0                       // position tiles per expert along y
	for j, n := range ns {
		starts[j+1] = starts[j] + n
		tiles = max(tiles, (n+tilePositions-1)/tilePositions)
	}
	total := starts[len(es)]
	type mat struct{ data, scales int }
	slots := []mat{{at(slotW1, set), at(slotS1, set)}, {at(slotW3, set), at(slotS3, set)}, {at(slotW2, set), at(slotS2, set)}}
	for i, pick := range []func(kernels.Expert) kernels.Matrix{
		func(e kernels.Expert) kernels.Matrix { return e.W1 },
		func(e kernels.Expert) kernels.Matrix { return e.W3 },
		func(e kernels.Expert) kernels.Matrix { return e.W2 },
	} {
		data, scales := make([][]byte, len(es)), make([][]byte, len(es))
		for j, e := range es {
			data[j], scales[j] = pick(e).Data, pick(e).Scales
		}
		m := pick(a)
		if err := b.putGroup(slots[i].data, data, words(len(m.Data))); err != nil {
			return nil, err
		}
		if err := b.putGroup(slots[i].scales, scales, words(len(m.Scales))); err != nil {
			return nil, err
		}
	}
	sx, sg, su, sy, stab := at(slotX, set), at(slotG, set), at(slotU, set), at(slotY, set), at(slotTab, set)
	xs, err := b.slot(sx, 4*total*dim)
	if err != nil {
		return nil, err
	}
	ins := make([]copyPair, len(es))
	for j := range es {
		ins[j] = copyPair{xs[4*starts[j]*dim:], f32bytes(x[j][:ns[j]*dim])}
	}
	parallelCopies(ins)
	b.pending = append(b.pending, pend{sx, 4 * total * dim})
	tab := make([]uint32, 1+2*len(es))
	tab[0] = uint32(tiles)
	for j, n := range ns {
		tab[1+2*j], tab[2+2*j] = uint32(starts[j]), uint32(n)
	}
	if err := b.putBytes(stab, u32bytes(tab)); err != nil {
		return nil, err
	}
	if err := b.startFFN(p, set, total, inter, dim); err != nil {
		return nil, err
	}
	gy := len(es) * tiles
	gi, _ := b.grid((inter + tileRows - 1) / tileRows)
	gd, _ := b.grid((dim + tileRows - 1) / tileRows)
	ax, ay := b.grid((total*inter + shaders.LocalSize - 1) / shaders.LocalSize)
	push := func(m kernels.Matrix, rows int) []uint32 {
		return append(matPush(m, rows, total, rows, 0), uint32(words(len(m.Data))), uint32(words(len(m.Scales))))
	}
	steps := []step{
		{shaders.MMGroup, []int{slots[0].data, slots[0].scales, sx, sg, stab}, push(a.W1, inter), gi, gy},
		{shaders.MMGroup, []int{slots[1].data, slots[1].scales, sx, su, stab}, push(a.W3, inter), gi, gy},
		{shaders.Act, []int{sg, su}, []uint32{uint32(total * inter), uint32(act.Kind), f32bits(act.Beta), f32bits(act.LinearBeta)}, ax, ay},
		{shaders.MMGroup, []int{slots[2].data, slots[2].scales, sg, sy, stab}, push(a.W2, dim), gd, gy},
	}
	submit := b.dev.Submit
	if p != nil {
		submit = func() error { return b.submitAsync(p) }
	}
	if err := b.record(steps, sy, 4*total*dim, submit); err != nil {
		return nil, err
	}
	collect := func() error {
		ys, err := b.slot(sy, 4*total*dim)
		if err != nil {
			return err
		}
		outs := make([]copyPair, len(es))
		for j := range es {
			outs[j] = copyPair{f32bytes(dst[j][:ns[j]*dim]), ys[4*starts[j]*dim : 4*starts[j+1]*dim]}
		}
		parallelCopies(outs)
		return nil
	}
	return &flight{set: set, collect: collect}, nil
}

func u32bytes(v []uint32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
}
