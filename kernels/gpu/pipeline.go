package gpu

import "errors"

// Pipelined calls: a product over streamed weights, or a group of streamed
// experts, is cut into pieces of about pipeChunk bytes of weights, each one
// call, and the host copies the next piece's weights into the other slot
// set while the device runs (DMA and shaders) the piece before. Without
// it, every byte of a streamed operand was copied into a slot by the host
// and only then crossed the bus and met the shaders: on the H200 the
// host's part was 41% of a 12288×7168 BF16 product's call at 256
// positions, the copies 31%, the shaders 27% (kernels/README.md, "Issue
// 33, seventh session"). On the device, a piece's weights cross the bus
// (DMA) while the piece before runs its shaders: a call's operand copies
// are a submission of their own, on the GPU's copy engines where it has a
// transfer queue, and wait only for the copies before them (vk.c); its
// results are copied back once its shaders are over, a submission of its
// own on a second transfer queue where the device has one (else on the
// shaders' queue), so that neither the next piece's copies nor its shaders
// wait behind that copy. (Results written into host
// memory by the shaders themselves, with no copy back, made the products'
// shaders 3.6× slower on an H100: kernels/README.md, "Issue 33, tenth
// session".)
// The arithmetic is the same (every output is one FMA chain over its
// columns, whichever piece holds its row), so the bits are too.

// A Pipeliner is a Device that runs a call while the host fills the next
// one: two frames, each recording and running one call on its own, in
// the order they were submitted, each seeing the writes of the calls
// before it. A pipelined call uses the slots of its set (slot+SetSlots
// for set 1), the Device's slots 0 to 2·SetSlots-1; the host writes a
// set's slots only when the frame that last used them is over.
type Pipeliner interface {
	// BeginFrame starts recording a call on frame f (0 or 1), after that
	// frame's last call has finished (Begin is BeginFrame(0)).
	BeginFrame(f int) error
	// SubmitAsync starts the recorded call and returns.
	SubmitAsync() error
	// Wait waits for frame f's call, if one is running.
	Wait(f int) error
}

// SetSlots is the slots one call uses; set 1's are slot+SetSlots.
const SetSlots = 16

// pipeChunk is the bytes of streamed weights one pipelined call takes by
// default: small enough that the first piece's copy, which nothing
// overlaps, is a fraction of a 176 MB product's, large enough that a
// piece fills the GPU (2,048 rows of a 7,168-column BF16 matrix: 32 row
// tiles of mmtile.comp by one per 32 positions).
const pipeChunk = 32 << 20

// SetPipelineChunk changes the bytes of streamed weights a pipelined call
// takes (0: pipeChunk; negative: no pipelining, one call per row block or
// group as before); the tests set a few KB to hold small shapes' pieces to
// the reference, and a benchmark can time the two against each other.
func (b *Backend) SetPipelineChunk(n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.chunk = n
}

// PipelinedCalls is how many calls have run while the host staged the
// next one.
func (b *Backend) PipelinedCalls() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.piped
}

// submitAsync starts the recorded call on p and counts it.
func (b *Backend) submitAsync(p Pipeliner) error {
	b.piped++
	return p.SubmitAsync()
}

// pipeliner returns the device's Pipeliner and the chunk bytes, or nil
// when the device has none or pipelining is off.
func (b *Backend) pipeliner() (Pipeliner, int) {
	p, ok := b.dev.(Pipeliner)
	if !ok || b.chunk < 0 {
		return nil, 0
	}
	if b.chunk == 0 {
		return p, pipeChunk
	}
	return p, b.chunk
}

// at is slot i of set s.
func at(i, set int) int { return i + set*SetSlots }

// beginFrame starts a call on frame f (through Begin where p is nil)
// with the copies of the slots written since the last call.
func (b *Backend) beginFrame(p Pipeliner, f int) error {
	pend := b.pending
	b.pending = b.pending[:0]
	var err error
	if p == nil {
		err = b.dev.Begin()
	} else {
		err = p.BeginFrame(f)
	}
	if err != nil {
		return err
	}
	for _, s := range pend {
		if err := b.dev.ToDevice(s.slot, s.n); err != nil {
			return err
		}
	}
	return nil
}

// settle waits for both frames; after an error it still waits for both,
// so that no call outlives the operation that made it.
func settle(p Pipeliner) error {
	if p == nil {
		return nil
	}
	return errors.Join(p.Wait(0), p.Wait(1))
}
