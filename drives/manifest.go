package drives

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/internal/atomicfile"
)

// ErrManifest reports a drive manifest that cannot be read back.
var ErrManifest = errors.New("drives: bad manifest")

// Sub is the directory a drive keeps under the path the user adds.
const Sub = "deltafin-experts"

const (
	manifestName = "manifest.json"
	dataName     = "experts.bin"
	version      = 1
	slotAlign    = 4096 // copies start on direct-read boundaries
)

// manifest is manifest.json: what the drive holds and for which layout.
type manifest struct {
	Version int    `json:"version"`
	Layout  string `json:"layout"` // Layout of the checkpoint the copies are of
	// Readers and GBps are the probe's: the reads in flight the drive
	// wants and the bandwidth it measured with them.
	Readers int      `json:"readers,omitempty"`
	GBps    float64  `json:"gb_per_s,omitempty"`
	Experts []record `json:"experts"`
}

// record is one copied expert.
type record struct {
	Layer  int    `json:"layer"`
	Expert int    `json:"expert"`
	Slot   int64  `json:"slot"` // offset of the copy in experts.bin
	Len    int64  `json:"len"`  // the copy's length (experts.ReplicaRange)
	CRC    uint32 `json:"crc32c"`
	Bad    bool   `json:"bad,omitempty"` // failed its checksum; Repair copies it again
}

func (r record) id() ckpt.ExpertID { return ckpt.ExpertID{Layer: r.Layer, Expert: r.Expert} }

// Layout fingerprints a checkpoint's expert layout (every span's shard,
// offset and size): copies made for one layout are never read for another.
func Layout(spans map[ckpt.ExpertID]ckpt.ExpertSpan) string {
	h := sha256.New()
	for _, id := range slices.SortedFunc(maps.Keys(spans), ckpt.ExpertID.Compare) {
		sp := spans[id]
		fmt.Fprintf(h, "%d %d %s %d %d\n", id.Layer, id.Expert, sp.Shard, sp.Offset, sp.Size)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// loadManifest reads dir's manifest; a missing one is an empty manifest.
func loadManifest(dir string) (manifest, error) {
	path := filepath.Join(dir, manifestName)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return manifest{Version: version}, nil
	}
	if err != nil {
		return manifest{}, fmt.Errorf("drives: %w", err)
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return manifest{}, fmt.Errorf("%w %s: %v", ErrManifest, path, err)
	}
	if m.Version != version {
		return manifest{}, fmt.Errorf("%w %s: version %d, want %d", ErrManifest, path, m.Version, version)
	}
	seen := map[ckpt.ExpertID]bool{}
	for _, r := range m.Experts {
		if r.Slot < 0 || r.Slot%slotAlign != 0 || r.Len <= 0 || seen[r.id()] {
			return manifest{}, fmt.Errorf("%w %s: %s has slot %d length %d", ErrManifest, path, r.id(), r.Slot, r.Len)
		}
		seen[r.id()] = true
	}
	return m, nil
}

// save replaces dir's manifest atomically.
func (m manifest) save(dir string) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("drives: %w", err)
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, manifestName), b, 0o644); err != nil {
		return fmt.Errorf("drives: %w", err)
	}
	return nil
}

// end is the first free slot: past every recorded copy.
func (m manifest) end() int64 {
	var end int64
	for _, r := range m.Experts {
		end = max(end, r.Slot+alignUp(r.Len))
	}
	return end
}

func alignUp(n int64) int64 { return (n + slotAlign - 1) &^ (slotAlign - 1) }

// SetAside moves a drive's damaged manifest out of the way (to
// manifest.json.damaged-<time>, kept for a look) and deletes the copies
// it described: without their records no copy can be told from another
// or checked, so none is read. Fill then copies the experts again, each
// checksummed. It returns the path the manifest was moved to.
func SetAside(path string, now time.Time) (string, error) {
	dir := filepath.Join(path, Sub)
	from := filepath.Join(dir, manifestName)
	to := from + ".damaged-" + now.UTC().Format("20060102T150405Z")
	if err := os.Rename(from, to); err != nil {
		return "", fmt.Errorf("drives: set the damaged manifest aside: %w", err)
	}
	if err := os.Remove(filepath.Join(dir, dataName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return to, fmt.Errorf("drives: %w", err)
	}
	return to, nil
}
