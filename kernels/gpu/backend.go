package gpu

import (
	"errors"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/deltafin/deltafin/kernels"
)

// ErrLimit reports an operand larger than the device takes; the call ran on
// the CPU.
var ErrLimit = errors.New("gpu: operand exceeds the device's limits")

// A Device runs the shaders of kernels/shaders. Buffers live in numbered
// slots (at most SetSlots; twice that on a Pipeliner); a call is Begin, Dispatches (each sees the writes of
// the ones before it), Submit (runs them and waits). Slots must not grow
// between Begin and Submit. Calls are serialised by Backend.
type Device interface {
	// Describe names the device, for doctor and bench output.
	Describe() string
	// MaxBuffer is the most bytes one binding may hold.
	MaxBuffer() int
	// MaxGroups is the most workgroups per dispatch dimension.
	MaxGroups() int
	// Slot returns slot i's host-visible memory, at least n bytes.
	Slot(i, n int) ([]byte, error)
	// Upload copies data into a new buffer in device memory and returns
	// its id, which Dispatch takes like a slot number, until Free. Not
	// between Begin and Submit.
	Upload(data []byte) (int, error)
	// Free releases a buffer from Upload.
	Free(id int)
	// ResidentBudget is how many bytes of uploaded weights the device
	// should hold at most.
	ResidentBudget() int64
	Begin() error
	// ToDevice records, between Begin and the call's first Dispatch, the
	// copy of slot i's first n bytes (as the host wrote them through Slot)
	// to the device memory the shaders read; ToHost, after the shaders
	// that write them, the copy of the results back, which Slot shows
	// after Submit: the copies back end a call (no Dispatch after them),
	// and may run beside the next call's shaders, so no call writes a
	// slot that a running call copies back (a Pipeliner's frames use
	// their own sets). Either does nothing where the shaders read the
	// host's memory itself (unified memory).
	ToDevice(i, n int) error
	ToHost(i, n int) error
	// Dispatch records shader over slots (bound at 1..len(slots)) with the
	// push constants, on gx×gy workgroups.
	Dispatch(shader string, slots []int, push []uint32, gx, gy int) error
	Submit() error
}

// Backend is a kernels.Backend on a Device.
type Backend struct {
	name     string
	mu       sync.Mutex
	dev      Device
	fallback kernels.Backend
	lastErr  error
	res      residency
	// pending are the slots written through Slot since the last Begin,
	// which begin copies to the device before the call's shaders run.
	pending []pend
	// bigMin: mmBigMinGroups unless set (SetBigTileMinGroups).
	bigMin int
	// chunk: pipeChunk unless set (SetPipelineChunk); piped counts the
	// calls submitted while the host went on (PipelinedCalls).
	chunk int
	piped int64
	// piece: a resident product's positions a call (SetPositionPiece).
	piece int
	// latents counts the latent attention calls run as one piece of work
	// (LatentCalls).
	latents int64
}

type pend struct{ slot, n int }

var _ kernels.Backend = (*Backend)(nil)

// New returns a backend called name on dev; calls the device cannot run go
// to fallback (the fastest CPU backend when nil).
func New(name string, dev Device, fallback kernels.Backend) *Backend {
	if fallback == nil {
		fallback = kernels.Default()
	}
	return &Backend{name: name, dev: dev, fallback: fallback}
}

// SetBigTileMinGroups changes the fewest workgroups of 128×64 tiles a
// product must fill to run in them (mmbig.comp; by default none does,
// mmBigMinGroups): 1 sends every product over 32 positions there, which is
// how the tests hold that shader to the reference on small shapes, and
// how a benchmark can time it against mmtile.comp.
func (b *Backend) SetBigTileMinGroups(n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.bigMin = n
}

// Name is the backend's name ("vulkan", "metal").
func (b *Backend) Name() string { return b.name }

// Device describes the device.
func (b *Backend) Device() string { return b.dev.Describe() }

// Fallback is the CPU backend that runs what the device cannot.
func (b *Backend) Fallback() kernels.Backend { return b.fallback }

// Err returns the last reason a call ran on the CPU, nil when every call
// ran on the device, and forgets it.
func (b *Backend) Err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	err := b.lastErr
	b.lastErr = nil
	return err
}

func (b *Backend) fail(err error) { b.lastErr = err }

func (b *Backend) maxBuf() int { return b.dev.MaxBuffer() }

func (b *Backend) slot(i, n int) ([]byte, error) { return b.dev.Slot(i, n) }

func (b *Backend) putBytes(i int, data []byte) error {
	m, err := b.dev.Slot(i, len(data))
	if err != nil {
		return err
	}
	parallelCopy(m, data)
	if len(data) > 0 {
		b.pending = append(b.pending, pend{i, len(data)})
	}
	return nil
}

func f32bytes(v []float32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
}

func (b *Backend) putF32(i int, v []float32) error { return b.putBytes(i, f32bytes(v)) }

func (b *Backend) getF32(i int, v []float32) error {
	m, err := b.dev.Slot(i, 4*len(v))
	if err != nil {
		return err
	}
	parallelCopy(f32bytes(v), m)
	return nil
}

// copyChunk is the bytes one goroutine of parallelCopies moves at least.
// Not less: on an H100's host, spans of 256 KiB and 128 KiB (a piece's
// 1.8 MB of inputs over 7 cores rather than 1) did not speed the products
// at 256 positions, and the prompts, whose CPU work runs beside the GPU's
// calls, ran slower (kernels/README.md, "Issue 33, twelfth session").
const copyChunk = 1 << 20

// A copyPair is one copy of parallelCopies: src into dst, as copy.
type copyPair struct{ dst, src []byte }

// parallelCopy copies src into dst (as copy) on up to NumCPU goroutines.
func parallelCopy(dst, src []byte) { parallelCopies([]copyPair{{dst, src}}) }

// parallelCopies makes every copy of pairs, cut into spans of at least
// copyChunk bytes spread over up to NumCPU goroutines: one core moves 5-8
// GB/s between host buffers, which made every upload of an operand slower
// than the bus it then crosses (16-core host of the H200: 15 GB/s read on
// one core, 100-120 on all). The pairs go together because a group of
// experts' inputs and results are one small copy an expert, each too small
// to be spread on its own.
func parallelCopies(pairs []copyPair) { spreadCopies(pairs, copyChunk) }

// spreadCopies is parallelCopies with spans of at least chunk bytes (the
// benchmark times chunks against each other).
func spreadCopies(pairs []copyPair, chunk int) {
	total := 0
	for _, c := range pairs {
		total += min(len(c.dst), len(c.src))
	}
	parts := min(runtime.NumCPU(), total/chunk)
	if parts < 2 {
		for _, c := range pairs {
			copy(c.dst, c.src)
		}
		return
	}
	step := (total/parts + 4095) &^ 4095 // at least chunk: parts ≤ total/chunk
	var spans []copyPair
	for _, c := range pairs {
		n := min(len(c.dst), len(c.src))
		for lo := 0; lo < n; lo += step {
			hi := min(n, lo+step)
			spans = append(spans, copyPair{c.dst[lo:hi], c.src[lo:hi]})
		}
	}
	// Each goroutine takes the next span until none is left: spans of
	// pairs shorter than a step are smaller, so a fixed share would not
	// balance.
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(parts, len(spans)) {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(spans)); i = next.Add(1) - 1 {
				copy(spans[i].dst, spans[i].src)
			}
		})
	}
	wg.Wait()
}

// begin starts a call with the copies of the slots written since the last
// one to the device.
func (b *Backend) begin() error { return b.beginFrame(nil, 0) }

func (b *Backend) submit() error { return b.dev.Submit() }

// submitTo ends a call with the copy of the first n bytes of the device's
// slot back to the host, then runs it.
func (b *Backend) submitTo(slot, n int) error {
	if err := b.dev.ToHost(slot, n); err != nil {
		return err
	}
	return b.dev.Submit()
}

func (b *Backend) dispatch(shader string, slots []int, push []uint32, gx, gy, _ int) error {
	return b.dev.Dispatch(shader, slots, push, gx, gy)
}

// grid splits groups workgroups over x and y within the dispatch limit.
func (b *Backend) grid(groups int) (gx, gy int) {
	gx = max(min(groups, b.dev.MaxGroups()), 1)
	return gx, (groups + gx - 1) / gx
}

func f32bits(v float32) uint32 { return math.Float32bits(v) }
