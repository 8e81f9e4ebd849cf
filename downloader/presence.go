package downloader

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/deltafin/deltafin/internal/atomicfile"
)

// presenceVersion is the on-disk format of a presence map.
const presenceVersion = 1

// presence is the persisted record of which byte ranges of one mirrored file
// are on disk. A range is added only after its bytes were written and the
// file fsynced, and the record is replaced atomically, so after a crash the
// map may miss bytes that are there but never claims bytes that are not.
type presence struct {
	Version int      `json:"version"`
	Size    int64    `json:"size"`
	Ranges  rangeSet `json:"ranges"`
	// Verified is the digest the complete file was checked against, empty
	// until then.
	Verified string `json:"verified,omitempty"`
	// VerifiedMtime is the complete file's modification time (Unix ns)
	// when it was verified: a file changed on disk since (another program,
	// a disk fault repaired by fsck, a user's edit) is hashed again by the
	// next Fetch instead of being called verified. 0: not recorded.
	VerifiedMtime int64 `json:"verified_mtime_ns,omitempty"`
	// XetVerified are the present ranges checked against the file's Xet
	// hash XetHash (a file held in part); always within Ranges.
	XetHash     string   `json:"xet_hash,omitempty"`
	XetVerified rangeSet `json:"xet_verified,omitempty"`
}

// loadPresence reads the map at path. A missing file is an empty map; a map
// for another size or a damaged one is discarded (the bytes are fetched
// again), because trusting it could hand the engine bytes that were never
// written.
func loadPresence(path string, size int64) (presence, error) {
	p := presence{Version: presenceVersion, Size: size}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return p, nil
	}
	if err != nil {
		return p, fmt.Errorf("downloader: read presence map: %w", err)
	}
	var got presence
	if json.Unmarshal(b, &got) != nil || got.Version != presenceVersion || got.Size != size || !got.Ranges.valid(size) {
		return p, nil
	}
	if !got.XetVerified.valid(size) {
		got.XetHash, got.XetVerified = "", nil
	}
	for _, r := range got.XetVerified {
		if !got.Ranges.covers(r) {
			got.XetHash, got.XetVerified = "", nil // checked bytes must be present
			break
		}
	}
	return got, nil
}

// save writes the map atomically: a temporary file in the same directory,
// fsynced, renamed over the old map, then the directory fsynced.
func (p presence) save(path string) error {
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("downloader: encode presence map: %w", err)
	}
	return writeFileAtomic(path, b)
}

// writeFileAtomic replaces path with data so that a crash leaves either the
// old or the new content, never a mix. 0o600 is what the temporary file
// always had.
func writeFileAtomic(path string, data []byte) error {
	if err := atomicfile.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("downloader: %w", err)
	}
	return nil
}
