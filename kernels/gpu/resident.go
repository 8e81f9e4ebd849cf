package gpu

import (
	"fmt"
	"time"

	"github.com/deltafin/deltafin/kernels"
)

// Resident weights: a matrix with a Key (bytes that never change) is copied
// to device memory on first use and read there afterwards, so a decode step
// over the pinned spine reads the GPU's memory instead of crossing the bus
// again; on a Mac's unified memory the copy is the only cost. Copies are
// kept up to the device's ResidentBudget and the least recently used go
// first. Everything here runs with b.mu held, outside Begin/Submit.

// resKey names one row block of a keyed matrix.
type resKey struct {
	key    uint64
	r0, r1 int
}

type resEntry struct {
	data, scales int // buffer ids; scales is -1 when the matrix has none
	bytes        int64
	used         uint64
}

type residency struct {
	entries map[resKey]*resEntry
	bytes   int64
	clock   uint64
	budget  int64 // 0: the device's ResidentBudget
	// uploaded and uploading count the copies made to keep weights
	// resident, and the time they took (Uploaded).
	uploaded  int64
	uploading time.Duration
}

// Uploaded reports the bytes of weights copied to the device to stay
// resident since the backend was made, and the time the copies took:
// the part of a first prompt's GPU time that later prompts do not pay
// (kernels.Routes reports it beside the calls).
func (b *Backend) Uploaded() (int64, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.res.uploaded, b.res.uploading
}

// SetResidentBudget caps the bytes of weights kept on the device (0: the
// device's own ResidentBudget; negative: keep none), evicting at once.
func (b *Backend) SetResidentBudget(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.res.budget = n
	b.evict(0)
}

// KeepsResident reports whether the device keeps keyed weights in its memory
// (a nonzero budget); kernels.Accelerate counts on it before it sends
// decode products over keyed weights to the device.
func (b *Backend) KeepsResident() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.resBudget() > 0
}

// ResidentBytes is how many bytes of weights the device holds now.
func (b *Backend) ResidentBytes() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.res.bytes
}

func (b *Backend) resBudget() int64 {
	if b.res.budget != 0 {
		return max(b.res.budget, 0)
	}
	return b.dev.ResidentBudget()
}

// evict frees least recently used copies until need more bytes fit.
func (b *Backend) evict(need int64) {
	for b.res.bytes+need > b.resBudget() && len(b.res.entries) > 0 {
		var oldK resKey
		var old *resEntry
		for k, e := range b.res.entries {
			if old == nil || e.used < old.used {
				oldK, old = k, e
			}
		}
		b.dev.Free(old.data)
		if old.scales >= 0 {
			b.dev.Free(old.scales)
		}
		b.res.bytes -= old.bytes
		delete(b.res.entries, oldK)
	}
}

// Preload copies a keyed matrix to the device in the row blocks MatMul
// uses (kernels.Preload), unless it is there already; false once the
// budget has no room for it (nothing is evicted) or the copy failed (Err).
func (b *Backend) Preload(w kernels.Matrix) bool {
	if w.Key == 0 || w.Rows == 0 {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	rowBytes := (len(w.Data) + len(w.Scales)) / w.Rows
	block := b.rowBlock(w)
	for r0 := 0; r0 < w.Rows; r0 += block {
		r1 := min(w.Rows, r0+block)
		if _, ok := b.res.entries[resKey{w.Key, r0, r1}]; ok {
			continue
		}
		if b.res.bytes+int64((r1-r0)*rowBytes) > b.resBudget() {
			return false
		}
		if _, _, err := b.weights(w, r0, r1, slotW1, slotS1); err != nil {
			b.fail(err)
			return false
		}
	}
	return true
}

// weights returns the buffer ids holding rows [r0, r1) of w and its scales:
// the resident copy for a keyed matrix that fits the budget, otherwise the
// host slots dataSlot and scaleSlot, filled now.
func (b *Backend) weights(w kernels.Matrix, r0, r1, dataSlot, scaleSlot int) (data, scales int, err error) {
	rowData, rowScales := len(w.Data)/w.Rows, len(w.Scales)/w.Rows
	d, s := w.Data[r0*rowData:r1*rowData], w.Scales[r0*rowScales:r1*rowScales]
	need := int64(len(d) + len(s))
	if w.Key == 0 || need > b.resBudget() {
		return dataSlot, scaleSlot, b.putBoth(dataSlot, d, scaleSlot, s)
	}
	if b.res.entries == nil {
		b.res.entries = map[resKey]*resEntry{}
	}
	k := resKey{w.Key, r0, r1}
	b.res.clock++
	e, ok := b.res.entries[k]
	if !ok {
		b.evict(need)
		start := time.Now()
		defer func() { b.res.uploaded, b.res.uploading = b.res.uploaded+need, b.res.uploading+time.Since(start) }()
		e = &resEntry{scales: -1, bytes: need}
		if e.data, err = b.dev.Upload(d); err != nil {
			return 0, 0, fmt.Errorf("keeping %d bytes of weights on the device: %w", len(d), err)
		}
		if len(s) > 0 {
			if e.scales, err = b.dev.Upload(s); err != nil {
				b.dev.Free(e.data)
				return 0, 0, fmt.Errorf("keeping %d bytes of scales on the device: %w", len(s), err)
			}
		}
		b.res.entries[k] = e
		b.res.bytes += need
	}
	e.used = b.res.clock
	if e.scales < 0 { // BF16, F16, F32: the shader still binds a scales buffer
		return e.data, scaleSlot, b.putBytes(scaleSlot, nil)
	}
	return e.data, e.scales, nil
}

func (b *Backend) putBoth(dataSlot int, d []byte, scaleSlot int, s []byte) error {
	if err := b.putBytes(dataSlot, d); err != nil {
		return err
	}
	return b.putBytes(scaleSlot, s)
}
