package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sync"
)

// ErrHeatFormat reports a heat file that is damaged or belongs to a model of
// another shape.
var ErrHeatFormat = errors.New("engine: heat file")

// heatHalving is the count at which every count is halved: a step decay, so
// that routing from long ago fades (about 65k uses of the hottest expert
// between halvings, a few thousand tokens) and no count can overflow.
const heatHalving = 1 << 16

var heatMagic = [8]byte{'D', 'F', 'H', 'E', 'A', 'T', '1', '\n'}

// Heat is a histogram of how often each routed expert was selected, decayed
// by halving. The expert cache admits and evicts by it, and it is saved in the
// data directory so that a new run starts with what the last runs learned.
// Safe for concurrent use.
type Heat struct {
	mu              sync.Mutex
	layers, experts int
	counts          []float32 // [layers, experts]
}

// NewHeat returns an empty histogram for layer numbers 0..layers-1 and
// experts 0..experts-1 per layer.
func NewHeat(layers, experts int) *Heat {
	return &Heat{layers: layers, experts: experts, counts: make([]float32, layers*experts)}
}

// LoadHeat reads a histogram saved by Save. A missing file gives an empty
// histogram; a file of another shape or a damaged one gives ErrHeatFormat (the
// caller decides whether to start afresh).
func LoadHeat(path string, layers, experts int) (*Heat, error) {
	h := NewHeat(layers, experts)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return h, nil
	}
	if err != nil {
		return h, fmt.Errorf("engine: read heat: %w", err)
	}
	want := len(heatMagic) + 8 + 4*layers*experts + 4
	switch {
	case len(b) < len(heatMagic)+8 || !bytes.Equal(b[:8], heatMagic[:]):
		return h, fmt.Errorf("%w: %s is not a heat file", ErrHeatFormat, path)
	case int(binary.LittleEndian.Uint32(b[8:])) != layers || int(binary.LittleEndian.Uint32(b[12:])) != experts:
		return h, fmt.Errorf("%w: %s is for %d×%d experts, the model has %d×%d", ErrHeatFormat, path,
			binary.LittleEndian.Uint32(b[8:]), binary.LittleEndian.Uint32(b[12:]), layers, experts)
	case len(b) != want:
		return h, fmt.Errorf("%w: %s has %d bytes, want %d", ErrHeatFormat, path, len(b), want)
	case crc32.ChecksumIEEE(b[:want-4]) != binary.LittleEndian.Uint32(b[want-4:]):
		return h, fmt.Errorf("%w: %s fails its checksum", ErrHeatFormat, path)
	}
	for i := range h.counts {
		v := math.Float32frombits(binary.LittleEndian.Uint32(b[16+4*i:]))
		if v < 0 || v != v || v > heatHalving {
			return NewHeat(layers, experts), fmt.Errorf("%w: %s has count %v", ErrHeatFormat, path, v)
		}
		h.counts[i] = v
	}
	return h, nil
}

// Touch records one selection of each of ids in layer. Out-of-range ids are
// ignored: the router has already validated them.
func (h *Heat) Touch(layer int, ids []int) {
	if h == nil || layer < 0 || layer >= h.layers {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	row := h.counts[layer*h.experts : (layer+1)*h.experts]
	halve := false
	for _, e := range ids {
		if e >= 0 && e < h.experts {
			row[e]++
			halve = halve || row[e] >= heatHalving
		}
	}
	if halve {
		for i := range h.counts {
			h.counts[i] /= 2
		}
	}
}

// Score is id's decayed selection count (0 when out of range).
func (h *Heat) Score(id ExpertID) float32 {
	if h == nil || id.Layer < 0 || id.Layer >= h.layers || id.Expert < 0 || id.Expert >= h.experts {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.counts[id.Layer*h.experts+id.Expert]
}

// Save writes the histogram atomically (temporary file, fsync, rename), so a
// crash leaves the previous file or the new one, never a torn one.
func (h *Heat) Save(path string) error {
	h.mu.Lock()
	b := make([]byte, 0, 20+4*len(h.counts))
	b = append(b, heatMagic[:]...)
	b = binary.LittleEndian.AppendUint32(b, uint32(h.layers))
	b = binary.LittleEndian.AppendUint32(b, uint32(h.experts))
	for _, v := range h.counts {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	h.mu.Unlock()
	b = binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
	return writeFileAtomic(path, b)
}

// writeFileAtomic replaces path with b: temporary file in the same
// directory, fsync, rename, fsync of the directory.
func writeFileAtomic(path string, b []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("engine: write %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
