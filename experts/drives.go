package experts

import (
	"context"
	"fmt"
	"hash/crc32"
	"time"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/internal/directio"
)

// Expert drives: directories on other disks that hold replicas of some
// routed experts, so that a token's expert reads spread over several
// devices (package drives copies and checks them). The checkpoint's own
// shards (the mirror) hold every expert and stay authoritative: a replica
// is only ever another place to read the same bytes, checked against the
// CRC-32C its drive recorded at copy time, and a drive that fails is
// dropped for the rest of the run while the mirror serves its reads.

// Drive is one drive holding replicas. Safe for concurrent use: the
// store asks it from many readers, while its owner may be copying more.
type Drive interface {
	// Name names the drive in Stats and errors (its directory).
	Name() string
	// Readers is the number of reads in flight the drive wants, chosen by
	// its probe; 0 means 8.
	Readers() int
	// Replica says where the replica of id lies; ok is false when the
	// drive does not hold it (yet, or any more). A drive removed after
	// the store asked fails the reads of its replicas' Source with
	// fs.ErrClosed: the store reads those experts elsewhere, without
	// counting the drive failed.
	Replica(id ckpt.ExpertID) (r Replica, ok bool)
	// Corrupt reports that bytes read from id's replica did not match its
	// checksum: the drive stops offering it until it has been repaired.
	Corrupt(id ckpt.ExpertID)
}

// Replica locates one expert's copy on a drive. The copy is the expert's
// covering aligned range of its shard, ReplicaRange: the store reads any
// chunk of an expert from the mirror or from a replica interchangeably.
type Replica struct {
	Source ckpt.Source // the file holding the copy
	Offset int64       // where ReplicaRange's first byte lies in it (a multiple of 4096)
	CRC32C uint32      // of the span's bytes (Castagnoli), as copied from the mirror
}

// ReplicaRange is the part of a shard a replica of the expert at sp holds:
// the span widened to 4096-byte boundaries, as direct reads of the shard
// read it. Bytes past the shard's end are zeros in the copy.
func ReplicaRange(sp ckpt.ExpertSpan) (lo, hi int64) {
	return directio.AlignDown(sp.Offset), directio.AlignUp(sp.Offset + sp.Size)
}

// SpanCRC is the checksum a replica records: CRC-32C of the span's bytes.
func SpanCRC(span []byte) uint32 { return crc32.Checksum(span, castagnoli) }

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Spans lists the routed MXFP4 experts of the checkpoint in dir and where
// each lies (ckpt.OpenIndex, Index.Experts), opening its files with open
// (nil: ckpt.OpenFile): what a drive copies and what a store reads without a
// model. It checks the experts' layout, not the config: the engine validates
// every tensor when it opens the model. A checkpoint without MXFP4 experts
// gives ckpt.ErrNoExperts.
func Spans(ctx context.Context, dir string, open ckpt.OpenSource) (map[ckpt.ExpertID]ckpt.ExpertSpan, error) {
	ix, err := ckpt.OpenIndex(ctx, dir, open)
	if err != nil {
		return nil, err
	}
	defer ix.Close()
	spans, err := ix.Experts()
	if err != nil {
		return nil, err
	}
	if len(spans) == 0 {
		return nil, fmt.Errorf("%s has %w", dir, ckpt.ErrNoExperts)
	}
	return spans, nil
}

// DriveStats is one drive's reads since the store opened: the mirror first
// (Name "mirror"), then the expert drives in the order given.
type DriveStats struct {
	Name    string
	Readers int   // reads in flight it may have
	Bytes   int64 // read from it
	Reads   int64 // chunk reads
	// Busy is the time with at least one read in flight, Idle the rest;
	// Starved is the part of Idle during which a read it could serve was
	// queued (the scheduler should keep it near zero).
	Busy, Idle, Starved time.Duration
	Corrupt             int64 // experts whose bytes from it failed their checksum
	Failed              bool  // a read failed: dropped for the rest of the run
}

// GBps is the drive's bandwidth while busy.
func (d DriveStats) GBps() float64 {
	if d.Busy <= 0 {
		return 0
	}
	return float64(d.Bytes) / d.Busy.Seconds() / 1e9
}

// SubDrives returns a − b drive by drive (b from an earlier reading).
func SubDrives(a, b []DriveStats) []DriveStats {
	out := make([]DriveStats, len(a))
	for i, d := range a {
		if i < len(b) {
			d.Bytes -= b[i].Bytes
			d.Reads -= b[i].Reads
			d.Busy -= b[i].Busy
			d.Idle -= b[i].Idle
			d.Starved -= b[i].Starved
			d.Corrupt -= b[i].Corrupt
		}
		out[i] = d
	}
	return out
}
