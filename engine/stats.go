package engine

import (
	"time"

	"github.com/deltafin/deltafin/experts"
)

// Stats is a reading of a model's streaming counters since Open: plain
// numbers for bench slice and for logs. A model loaded whole into RAM reads
// nothing after Open, and its Stats are zero.
type Stats struct {
	ExpertBytes    int64 // routed-expert bytes read from disk, alignment padding included
	SpineBytes     int64 // bytes of streamed spine layers read
	ExpertReads    int64 // expert reads, demand and prefetch
	PrefetchReads  int64 // of which prefetches
	CacheHits      int64 // demanded experts found in the cache
	PrefetchHits   int64 // demanded experts found prefetched
	PrefetchWasted int64 // prefetched experts dropped unused
	Shared         int64 // demanded experts another batch was already reading or holding
	Misses         int64 // demanded experts read on demand
	CachedExperts  int   // experts in the cache now
	// DiskIdle is the time with no read in flight; ReadsInFlight is the
	// number of reads in flight integrated over time, in seconds (its
	// growth over an interval ÷ the interval is the mean queue depth).
	DiskIdle      time.Duration
	ReadsInFlight float64
	// ExpertWait is the time the forward passes spent waiting for routed
	// experts' bytes to arrive (the compute stalled on the disk): a
	// pass's time less this is its compute.
	ExpertWait time.Duration
	// Drives are the mirror's and each expert drive's reads (drives.go);
	// ChecksumFailures the experts read again because a drive's copy failed
	// its checksum.
	Drives           []experts.DriveStats
	ChecksumFailures int64
}

// DiskBytes is everything read from disk: experts and spine.
func (s Stats) DiskBytes() int64 { return s.ExpertBytes + s.SpineBytes }

// Demanded is the number of experts the forward passes asked for.
func (s Stats) Demanded() int64 { return s.CacheHits + s.PrefetchHits + s.Shared + s.Misses }

// Sub returns the counters of s minus those of an earlier reading.
func (s Stats) Sub(b Stats) Stats {
	return Stats{
		ExpertBytes: s.ExpertBytes - b.ExpertBytes, SpineBytes: s.SpineBytes - b.SpineBytes,
		ExpertReads: s.ExpertReads - b.ExpertReads, PrefetchReads: s.PrefetchReads - b.PrefetchReads,
		CacheHits: s.CacheHits - b.CacheHits, PrefetchHits: s.PrefetchHits - b.PrefetchHits,
		PrefetchWasted: s.PrefetchWasted - b.PrefetchWasted, Shared: s.Shared - b.Shared, Misses: s.Misses - b.Misses,
		CachedExperts: s.CachedExperts, DiskIdle: s.DiskIdle - b.DiskIdle, ReadsInFlight: s.ReadsInFlight - b.ReadsInFlight,
		ExpertWait: s.ExpertWait - b.ExpertWait,
		Drives:     experts.SubDrives(s.Drives, b.Drives), ChecksumFailures: s.ChecksumFailures - b.ChecksumFailures,
	}
}

func statsOf(st experts.Stats, spine int64, io experts.MeterStats) Stats {
	return Stats{
		ExpertBytes: st.DiskBytes, SpineBytes: spine, ExpertReads: st.Reads, PrefetchReads: st.SpecReads,
		CacheHits: st.CacheHits, PrefetchHits: st.SpecHits, PrefetchWasted: st.SpecWasted, Shared: st.Shared,
		Misses: st.Misses, CachedExperts: st.CachedNow, DiskIdle: io.Idle, ReadsInFlight: io.Depth,
		Drives: st.Drives, ChecksumFailures: st.Corrupt,
	}
}

// Stats returns the model's streaming counters since Open.
func (m *Model) Stats() Stats {
	st := m.experts.stats()
	var spine int64
	if m.spine != nil {
		spine = m.spine.bytes.Load()
	}
	s := statsOf(st, spine, m.io.Stats())
	s.ExpertWait = time.Duration(m.expertWait.Load())
	return s
}
