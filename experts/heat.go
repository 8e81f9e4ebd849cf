package experts

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/internal/atomicfile"
)

// errHeatFormat reports a heat file that is damaged or belongs to a model of
// another shape.
var errHeatFormat = errors.New("experts: heat file")

// heatHalving is the count at which every count is halved whatever the
// token clock says, so that no count can overflow.
const heatHalving = 1 << 16

// DefaultHeatHalfLife is the number of tokens after which every count is
// halved (StreamOptions.HeatHalfLife): selection-hotness with a step
// decay, so that what a conversation routed a thousand tokens ago weighs
// half of what it routes now.
const DefaultHeatHalfLife = 1024

// Heat is a histogram of how often each routed expert was selected,
// halved every halfLife tokens (Tick). The expert cache admits and evicts
// by it, and it is saved in the data directory so that a new run starts
// with what the last runs learned. Safe for concurrent use.
type Heat struct {
	mu              sync.Mutex
	layers, experts int
	counts          []float32 // [layers, experts]
	halfLife        int       // tokens between halvings; 0: only at heatHalving
	tokens          int       // tokens since the last halving
}

// NewHeat returns an empty histogram for layer numbers 0..layers-1 and
// experts 0..experts-1 per layer, halved every DefaultHeatHalfLife tokens.
func NewHeat(layers, experts int) *Heat {
	return &Heat{layers: layers, experts: experts, counts: make([]float32, layers*experts), halfLife: DefaultHeatHalfLife}
}

// SetHalfLife sets the tokens between halvings; n ≤ 0 leaves only the
// overflow halving (cumulative counts).
func (h *Heat) SetHalfLife(n int) {
	h.mu.Lock()
	h.halfLife = max(n, 0)
	h.mu.Unlock()
}

// Tick advances the token clock by n tokens, halving every count each
// time it passes a multiple of the half-life. The phase is not saved: a
// new run starts a fresh period.
func (h *Heat) Tick(n int) {
	if h == nil || n <= 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.halfLife <= 0 {
		return
	}
	h.tokens += n
	for h.tokens >= h.halfLife {
		h.tokens -= h.halfLife
		h.halveLocked()
	}
}

func (h *Heat) halveLocked() {
	for i := range h.counts {
		h.counts[i] /= 2
	}
}

// LoadHeat reads a histogram saved by Save: JSON lines
// {"layer":L,"expert":E,"heat":h}, the format `deltafin warm` reads. A
// missing file gives an empty histogram; a damaged line or an expert outside
// the model gives errHeatFormat and an empty histogram (the caller decides
// whether to start afresh).
func LoadHeat(path string, layers, experts int) (*Heat, error) {
	h := NewHeat(layers, experts)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return h, nil
	}
	if err != nil {
		return h, fmt.Errorf("experts: read heat: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var r heatRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return NewHeat(layers, experts), fmt.Errorf("%w: %s line %d: %v", errHeatFormat, path, line, err)
		}
		switch {
		case r.Layer < 0 || r.Layer >= layers || r.Expert < 0 || r.Expert >= experts:
			return NewHeat(layers, experts), fmt.Errorf("%w: %s line %d: layer %d expert %d is outside the model's %d×%d experts",
				errHeatFormat, path, line, r.Layer, r.Expert, layers, experts)
		case !(r.Heat >= 0 && r.Heat <= heatHalving):
			return NewHeat(layers, experts), fmt.Errorf("%w: %s line %d: heat %v", errHeatFormat, path, line, r.Heat)
		}
		h.counts[r.Layer*experts+r.Expert] = float32(r.Heat)
	}
	if err := sc.Err(); err != nil {
		return NewHeat(layers, experts), fmt.Errorf("%w: %s: %v", errHeatFormat, path, err)
	}
	return h, nil
}

// heatRecord is one line of a saved histogram.
type heatRecord struct {
	Layer  int     `json:"layer"`
	Expert int     `json:"expert"`
	Heat   float64 `json:"heat"`
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
		h.halveLocked()
	}
}

// Score is id's decayed selection count (0 when out of range).
func (h *Heat) Score(id ckpt.ExpertID) float32 {
	if h == nil || id.Layer < 0 || id.Layer >= h.layers || id.Expert < 0 || id.Expert >= h.experts {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.counts[id.Layer*h.experts+id.Expert]
}

// Save writes the non-zero counts as JSON lines atomically (temporary
// file, fsync, rename), so a crash leaves the previous file or the new one,
// never a torn one.
func (h *Heat) Save(path string) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	h.mu.Lock()
	for i, v := range h.counts {
		if v > 0 {
			enc.Encode(heatRecord{Layer: i / h.experts, Expert: i % h.experts, Heat: float64(v)})
		}
	}
	h.mu.Unlock()
	return writeFileAtomic(path, b.Bytes())
}

// writeFileAtomic replaces path with b (see atomicfile), creating the
// directory first. 0o600 is what the temporary file always had.
func writeFileAtomic(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("experts: %w", err)
	}
	if err := atomicfile.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("experts: %w", err)
	}
	return nil
}

// HeatScores reads a saved heat histogram (StreamOptions.HeatPath) for the
// experts of spans: what package drives ranks its copies by, hottest first.
// A missing file gives no scores.
func HeatScores(path string, spans map[ckpt.ExpertID]ckpt.ExpertSpan) (map[ckpt.ExpertID]float32, error) {
	layers, experts := 0, 0
	for id := range spans {
		layers, experts = max(layers, id.Layer+1), max(experts, id.Expert+1)
	}
	h, err := LoadHeat(path, layers, experts)
	if err != nil {
		return nil, err
	}
	out := map[ckpt.ExpertID]float32{}
	for id := range spans {
		if v := h.Score(id); v > 0 {
			out[id] = v
		}
	}
	return out, nil
}
