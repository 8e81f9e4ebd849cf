package experts

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/internal/directio"
)

// errDropped marks the skipped chunks of a prefetch dropped before its read
// finished; nobody waits for such an entry.
var errDropped = errors.New("experts: prefetch dropped")

// ErrClosed is returned by a store used after Close.
var ErrClosed = errors.New("experts: expert store closed")

// Options configures Open.
type Options struct {
	Dir   string                            // model directory holding the shards
	Spans map[ckpt.ExpertID]ckpt.ExpertSpan // every routed expert (ckpt.IndexExperts over each shard)
	Mode  directio.Mode                     // directio.Direct unless a measurement says otherwise
	Heat  *Heat                             // nil: a fresh in-memory histogram
	// Sources are the shards' Sources by name (the checkpoint's): a shard
	// whose Source is an ckpt.Ensurer has each expert made present (one Ensure
	// of its span) before it is read. Nil or absent: a complete local file.
	Sources map[string]ckpt.Source
	// CacheExperts is how many experts the in-RAM cache keeps between uses
	// (the budget plan's cache size ÷ the span size); 0 keeps none.
	CacheExperts int
	// PrefetchExperts bounds the buffers speculative reads may hold
	// (default 32: one layer's top-16 twice).
	PrefetchExperts int
	// Readers is the number of chunk reads in flight (default 32: NVMe and
	// Apple SSDs reach their bandwidth at a queue depth of 4 to 16, the
	// virtio disk here wants more).
	Readers int
	// ChunkBytes is the size of one read (default ReadChunk; rounded up to
	// the 4096-byte alignment of direct reads).
	ChunkBytes int
	// Drives are expert drives holding replicas of some experts: each
	// chunk read goes to a drive that holds it (readsched.go).
	Drives []Drive
	// MirrorLast reads from the shards only what no working drive holds.
	MirrorLast bool
	// HeatHalfLife is the tokens between halvings of the heat histogram
	// (0: DefaultHeatHalfLife; negative: never, cumulative counts).
	HeatHalfLife int
	Meter        *Meter // reads in flight of this store (and whatever else shares it), or nil
}

// Store reads routed experts from shard files: a layer's selected
// experts are read in parallel, each with one positional read of its span
// into a reusable aligned buffer, bypassing the page cache so that expert
// traffic does not evict the spine. Experts stay in RAM while in use, while a
// prefetch holds them, and in a cache ranked by the heat histogram. Which
// experts a token uses is decided by the router alone: the store only changes
// where their bytes come from.
type Store struct {
	spans       map[ckpt.ExpertID]ckpt.ExpertSpan
	shards      map[string]*ShardFile
	mode        directio.Mode
	heat        *Heat
	bufSize     int
	cacheCap    int
	prefetchCap int
	chunk       int64
	meter       *Meter // the model's, or nil
	firstLayer  int    // the lowest MoE layer: its Acquire ticks the heat clock

	ctx    context.Context // cancelled by Close; reads run under it
	cancel context.CancelFunc
	sched  *readScheduler
	wg     sync.WaitGroup

	mu      sync.Mutex
	entries map[ckpt.ExpertID]*entry
	free    [][]byte
	nbufs   int
	cached  int
	specN   int
	closed  bool

	stats counters
	last  map[int][]int // each layer's most recent selection
}

// entry is one expert's bytes in RAM or on their way there.
type entry struct {
	id      ckpt.ExpertID
	buf     []byte        // aligned backing buffer
	data    []byte        // the span inside buf
	done    chan struct{} // closed when the read has finished
	err     error         // set before done closes
	mu      sync.Mutex    // guards err and pending while chunks are read
	pending int           // chunk reads not yet finished
	refs    int           // batches holding it, plus one while its read is in flight
	spec    bool          // read by a prefetch and not yet used by a batch
	cache   bool          // admitted to the cache
	gone    bool          // removed from the table; the buffer returns when refs reach 0
	// dropped is set with gone: chunk reads not yet started are skipped, so
	// a wrong prefetch costs only what is already in flight.
	dropped atomic.Bool
	// reps are the expert drives' replicas, by drive index (the mirror's,
	// 0, unused), looked up when the read is submitted; skip (guarded by
	// the scheduler) the drives whose copy failed its checksum; fromRep
	// (guarded by mu) the drives that filled buf.
	reps    []Replica
	skip    uint64
	fromRep uint64
}

// counters are the store's statistics (atomics: read without the lock).
type counters struct {
	diskBytes, reads, specReads, specHits, cacheHits, shared, misses, specWasted, corrupt atomic.Int64
}

// Stats is a snapshot of the store's counters since open.
type Stats struct {
	DiskBytes   int64 // bytes read from disk, alignment padding included
	Reads       int64 // expert reads (demand and prefetch)
	SpecReads   int64 // of which prefetches
	SpecHits    int64 // demanded experts found prefetched
	SpecWasted  int64 // prefetched experts dropped unused
	CacheHits   int64 // demanded experts found in the cache
	Shared      int64 // demanded experts another batch was already reading or holding
	Misses      int64 // demanded experts read on demand
	CachedNow   int   // experts in the cache now
	BufferBytes int64 // RAM held by the store's buffers
	Corrupt     int64 // experts read again after a replica failed its checksum
	Drives      []DriveStats
}

// Sub returns the counters of s minus those of an earlier reading b (the
// experts cached and the buffers held are s's).
func (s Stats) Sub(b Stats) Stats {
	s.DiskBytes -= b.DiskBytes
	s.Reads -= b.Reads
	s.SpecReads -= b.SpecReads
	s.SpecHits -= b.SpecHits
	s.SpecWasted -= b.SpecWasted
	s.CacheHits -= b.CacheHits
	s.Shared -= b.Shared
	s.Misses -= b.Misses
	s.Corrupt -= b.Corrupt
	s.Drives = SubDrives(s.Drives, b.Drives)
	return s
}

// Demanded is the number of experts the store's users asked for.
func (s Stats) Demanded() int64 { return s.CacheHits + s.SpecHits + s.Shared + s.Misses }

// Open opens the shards named by opts.Spans and checks that every
// span lies inside its shard, so that a truncated download fails here with
// the expert it cut, not in the middle of a token.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if len(opts.Spans) == 0 {
		return nil, fmt.Errorf("experts: expert store: no experts")
	}
	if opts.Readers <= 0 {
		opts.Readers = 32
	}
	if opts.PrefetchExperts <= 0 {
		opts.PrefetchExperts = 32
	}
	if opts.ChunkBytes <= 0 {
		opts.ChunkBytes = ReadChunk
	}
	if opts.CacheExperts < 0 {
		opts.CacheExperts = 0
	}
	s := &Store{
		spans: opts.Spans, shards: map[string]*ShardFile{}, mode: opts.Mode, heat: opts.Heat,
		meter: opts.Meter, cacheCap: opts.CacheExperts, prefetchCap: opts.PrefetchExperts, chunk: directio.AlignUp(int64(opts.ChunkBytes)),
		entries: map[ckpt.ExpertID]*entry{}, last: map[int][]int{},
	}
	var err error
	if s.sched, err = newReadScheduler(opts.Readers, opts.Drives, opts.MirrorLast); err != nil {
		return nil, err
	}
	var maxSpan int64
	maxLayer, maxExpert := 0, 0
	s.firstLayer = -1
	for id := range opts.Spans {
		maxLayer, maxExpert = max(maxLayer, id.Layer), max(maxExpert, id.Expert)
		if s.firstLayer < 0 || id.Layer < s.firstLayer {
			s.firstLayer = id.Layer
		}
	}
	if s.heat == nil {
		s.heat = NewHeat(maxLayer+1, maxExpert+1)
	}
	if opts.HeatHalfLife != 0 {
		s.heat.SetHalfLife(opts.HeatHalfLife)
	}
	sizes := map[string]int64{}
	for _, id := range slices.SortedFunc(maps.Keys(opts.Spans), ckpt.ExpertID.Compare) {
		sp := opts.Spans[id]
		if sp.Size <= 0 || sp.Offset < 0 {
			return nil, fmt.Errorf("%w: %s has span [%d,+%d) in %s", ckpt.ErrExpertLayout, id, sp.Offset, sp.Size, sp.Shard)
		}
		maxSpan = max(maxSpan, sp.Size)
		if _, ok := s.shards[sp.Shard]; !ok {
			sf, size, err := OpenShard(filepath.Join(opts.Dir, sp.Shard), sp.Shard, opts.Mode, opts.Sources[sp.Shard])
			if err != nil {
				s.closeFiles()
				return nil, err
			}
			s.shards[sp.Shard], sizes[sp.Shard] = sf, size
		}
	}
	if id, ok := ckpt.FirstTruncated(opts.Spans, sizes); ok {
		s.closeFiles()
		sp := opts.Spans[id]
		return nil, ckpt.TruncatedError(id, sp, sizes[sp.Shard])
	}
	// A covering aligned range is at most one block longer at each end.
	s.bufSize = int(directio.AlignUp(maxSpan) + directio.Align)
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	for _, d := range s.sched.drives {
		for range d.readers {
			s.wg.Add(1)
			go s.reader(d)
		}
	}
	return s, nil
}

// Stats returns the store's counters.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	cached, nbufs := s.cached, s.nbufs
	s.mu.Unlock()
	c := &s.stats
	return Stats{
		DiskBytes: c.diskBytes.Load(), Reads: c.reads.Load(), SpecReads: c.specReads.Load(),
		SpecHits: c.specHits.Load(), SpecWasted: c.specWasted.Load(), CacheHits: c.cacheHits.Load(), Shared: c.shared.Load(),
		Misses: c.misses.Load(), CachedNow: cached, BufferBytes: int64(nbufs) * int64(s.bufSize),
		Corrupt: c.corrupt.Load(), Drives: s.sched.stats(),
	}
}

// Close stops the readers and closes the shards. Batches still held stay
// readable; their Wait returns ErrClosed if their read had not finished.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	left := s.sched.close()
	s.wg.Wait()
	for _, j := range left {
		s.chunkDone(j.e, ErrClosed, 0, 0)
	}
	return s.closeFiles()
}

func (s *Store) closeFiles() error {
	var first error
	for _, sf := range s.shards {
		if err := sf.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// A Batch is one layer's selected experts for one token, in router order.
// Its bytes are valid until Release.
type Batch struct {
	s       *Store
	entries []*entry
}

// Len is the number of experts in the batch.
func (b *Batch) Len() int { return len(b.entries) }

// Done is closed when the i-th expert's read has finished (successfully or
// not), so a caller can compute each expert as soon as it arrives.
func (b *Batch) Done(i int) <-chan struct{} { return b.entries[i].done }

// Wait blocks until the i-th expert's bytes are in RAM and returns them.
func (b *Batch) Wait(ctx context.Context, i int) ([]byte, error) {
	e := b.entries[i]
	select {
	case <-e.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if e.err != nil {
		return nil, e.err
	}
	return e.data, nil
}

// Release gives the batch's experts back: each one is admitted to the cache
// or its buffer is reused. The batch must not be used afterwards.
func (b *Batch) Release() {
	s := b.s
	s.mu.Lock()
	for _, e := range b.entries {
		s.unref(e)
	}
	s.mu.Unlock()
	b.entries = nil
}

// Acquire returns layer's experts ids (the router's selection, in its order),
// starting reads for those not already in RAM. It does not wait for the
// reads: Batch.Wait does. Any prefetched expert of this layer that ids does
// not name is dropped, since the router has decided.
func (s *Store) Acquire(ctx context.Context, layer int, ids []int) (*Batch, error) {
	return s.AcquirePart(ctx, layer, ids, ids)
}

// AcquirePart is Acquire for one part of a larger selection: a prefill's
// union of experts is acquired a group at a time, and only the prefetches
// outside the whole selection (union) are wrong guesses to drop. Dropping
// the later groups' prefetches would read them twice.
func (s *Store) AcquirePart(ctx context.Context, layer int, ids, union []int) (*Batch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for i, e := range ids {
		if _, ok := s.spans[ckpt.ExpertID{Layer: layer, Expert: e}]; !ok {
			return nil, fmt.Errorf("experts: %s is not in the checkpoint", ckpt.ExpertID{Layer: layer, Expert: e})
		}
		for _, d := range ids[:i] {
			if d == e {
				return nil, fmt.Errorf("experts: layer %d selects expert %d twice", layer, e)
			}
		}
	}
	s.heat.Touch(layer, ids)
	if layer == s.firstLayer && len(ids) > 0 && len(union) > 0 && ids[0] == union[0] {
		// The first MoE layer's first group: one more forward pass
		// (a decode token; a prefill counts once) on the heat clock.
		s.heat.Tick(1)
	}
	b := &Batch{s: s, entries: make([]*entry, len(ids))}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	// Claim what is already in RAM first, so that a miss below cannot
	// evict (as an unused prefetch or a cold cache entry) an expert this
	// batch is about to use and so read it twice.
	for i, x := range ids {
		if e := s.entries[ckpt.ExpertID{Layer: layer, Expert: x}]; e != nil {
			e.refs++
			b.entries[i] = e
		}
	}
	for i, x := range ids {
		id := ckpt.ExpertID{Layer: layer, Expert: x}
		e := b.entries[i]
		if e != nil {
			e.refs-- // taken again below, once the case is counted
		}
		switch {
		case e == nil:
			e = s.newEntry(id, s.takeBuffer(bufDemand))
			s.stats.misses.Add(1)
			s.submit(e, true)
		case e.spec:
			e.spec = false
			s.specN--
			s.stats.specHits.Add(1)
			s.sched.mu.Lock()
			s.sched.promote(e)
			s.sched.mu.Unlock()
		case e.cache:
			s.stats.cacheHits.Add(1)
		default:
			s.stats.shared.Add(1)
		}
		e.refs++
		b.entries[i] = e
	}
	s.last[layer] = append(s.last[layer][:0], ids...)
	// The router of this layer has run: its unused prefetches are wrong guesses.
	inUnion := func(x int) bool {
		for _, u := range union {
			if u == x {
				return true
			}
		}
		return false
	}
	for id, e := range s.entries {
		if id.Layer == layer && e.spec && !inUnion(id.Expert) {
			s.stats.specWasted.Add(1)
			s.drop(e)
		}
	}
	return b, nil
}

// Prefetch starts reading layer's experts ids that are not in RAM, at a lower
// priority than demand reads and only while prefetch buffers are free: a hint
// that never blocks and never changes which experts a batch gets. The engine
// calls it with the previous token's selection of a layer, and with the next
// layer's selection as soon as its router has run.
func (s *Store) Prefetch(layer int, ids []int) { s.prefetch(layer, ids, bufGuess) }

// PrefetchPart is Prefetch for the next group of a selection the router has
// already made (a prefill's union, acquired a group at a time): certain, not
// a guess, so when the budget's buffers are all taken it evicts the coldest
// cached expert rather than leave the disk one group deep while the
// current group computes.
func (s *Store) PrefetchPart(layer int, ids []int) { s.prefetch(layer, ids, bufCertain) }

// PrefetchAhead starts reading experts of a selection already made beyond
// the next group (a prompt's experts as its chunks are routed, and the
// rest of its union while earlier groups compute), as deep as the budget
// has buffers to spare: it evicts nothing, so a cached expert the same
// selection needs later is never dropped to read another, and it may use
// the cache's unfilled share as well as the prefetch window.
func (s *Store) PrefetchAhead(layer int, ids []int) { s.prefetch(layer, ids, bufAhead) }

func (s *Store) prefetch(layer int, ids []int, need bufNeed) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	specCap := s.prefetchCap
	if need == bufAhead {
		specCap += s.cacheCap
	}
	for _, x := range ids {
		id := ckpt.ExpertID{Layer: layer, Expert: x}
		if _, ok := s.spans[id]; !ok || s.entries[id] != nil || s.specN >= specCap {
			continue
		}
		buf := s.takeBuffer(need)
		if buf == nil {
			return
		}
		e := s.newEntry(id, buf)
		e.spec = true
		s.specN++
		s.stats.specReads.Add(1)
		s.submit(e, false)
	}
}

// PrefetchPrevious prefetches the experts layer selected last time (a
// decode token repeats about 31% of the previous token's experts).
func (s *Store) PrefetchPrevious(layer int) {
	s.mu.Lock()
	ids := append([]int(nil), s.last[layer]...)
	s.mu.Unlock()
	s.Prefetch(layer, ids)
}

func (s *Store) newEntry(id ckpt.ExpertID, buf []byte) *entry {
	e := &entry{id: id, buf: buf, done: make(chan struct{})}
	s.entries[id] = e
	return e
}

// ReadChunk is the size of one positional read. A span is read as several
// chunks in parallel: on the virtio disk here 4 MiB reads reach about 20%
// more bandwidth than whole 17.5 MB ones (STREAMING.md), and a layer whose
// cache hits leave only a few misses still keeps the queue deep.
const ReadChunk = 4 << 20

// A readJob is one chunk [lo, hi) of the file range covering an entry's
// span, at demand or prefetch priority; or, for a shard whose Source is a
// ckpt.Ensurer (an installed mirror, full or stream), the expert's Ensure:
// one request for the whole span (a stream install's one HTTP range, a
// full install's presence check), after which the reader that ran it
// queues the span's chunks like any other shard's. So every install reads
// its experts through the same chunked, scheduled path.
type readJob struct {
	e      *entry
	lo, hi int64
	demand bool
	ensure bool
}

// submit queues e's read as chunk jobs; the in-flight read holds a
// reference. The expert drives holding e are looked up here. Called with
// mu held.
func (s *Store) submit(e *entry, demand bool) {
	e.refs++
	if n := len(s.sched.drives); n > 1 {
		e.reps = make([]Replica, n)
		for _, d := range s.sched.drives[1:] {
			if r, ok := d.dev.Replica(e.id); ok && r.Source != nil {
				e.reps[d.idx] = r
			}
		}
	}
	jobs := s.jobs(e, demand)
	e.pending = len(jobs)
	s.sched.mu.Lock()
	s.sched.push(jobs, false)
	s.sched.mu.Unlock()
}

// jobs is e's read: its Ensure first where the shard's Source may lack
// bytes, else its chunks.
func (s *Store) jobs(e *entry, demand bool) []readJob {
	if s.shards[s.spans[e.id].Shard].Sparse() {
		return []readJob{{e: e, demand: demand, ensure: true}}
	}
	return s.chunks(e, demand)
}

// chunks splits e's read into chunks of the covering range.
func (s *Store) chunks(e *entry, demand bool) []readJob {
	sp := s.spans[e.id]
	lo, hi := sp.Offset, sp.Offset+sp.Size
	if s.shards[sp.Shard].Direct() {
		lo, hi = directio.AlignDown(lo), directio.AlignUp(hi)
	}
	var jobs []readJob
	for c := lo; c < hi; c += s.chunk {
		jobs = append(jobs, readJob{e: e, lo: c, hi: min(c+s.chunk, hi), demand: demand})
	}
	return jobs
}

// bufNeed says how much a read may do to get a buffer.
type bufNeed uint8

const (
	bufGuess   bufNeed = iota // a prefetch guess: only what is free or within the budget
	bufAhead                  // a selection's later part: the same, with a deeper window
	bufCertain                // a part of a selection already made: may also evict, never exceed
	bufDemand                 // a demand read: may also allocate past the budget rather than wait
)

// takeBuffer returns a free buffer, or nil where need allows no more.
// Within the budget it allocates; past it, certain and demand reads evict
// (wrong prefetches first, then the coldest cached expert), and a demand
// read that finds nothing to evict allocates anyway. Called with mu held.
func (s *Store) takeBuffer(need bufNeed) []byte {
	if n := len(s.free); n > 0 {
		b := s.free[n-1]
		s.free = s.free[:n-1]
		return b
	}
	limit := s.cacheCap + s.prefetchCap + 2*MaxTopK
	if s.nbufs < limit {
		s.nbufs++
		return directio.Buffer(s.bufSize)
	}
	if need <= bufAhead {
		return nil
	}
	if v := s.victim(); v != nil {
		s.drop(v)
		if n := len(s.free); n > 0 {
			b := s.free[n-1]
			s.free = s.free[:n-1]
			return b
		}
	}
	if need == bufDemand {
		s.nbufs++
		return directio.Buffer(s.bufSize)
	}
	return nil
}

// MaxTopK is the largest selection the buffer budget plans for (K3: 16).
const MaxTopK = 16

// victim picks the entry to evict: an unused prefetch, else the cached
// expert with the lowest heat. Only entries nobody holds qualify.
func (s *Store) victim() *entry {
	var best *entry
	var bestHeat float32
	for _, e := range s.entries {
		if e.refs != 0 || (!e.spec && !e.cache) {
			continue
		}
		if e.spec {
			return e
		}
		if h := s.heat.Score(e.id); best == nil || h < bestHeat {
			best, bestHeat = e, h
		}
	}
	return best
}

// drop removes e from the table; its buffer is reused once nothing holds it.
func (s *Store) drop(e *entry) {
	if e.gone {
		return
	}
	e.gone = true
	e.dropped.Store(true)
	delete(s.entries, e.id)
	if e.spec {
		e.spec = false
		s.specN--
	}
	if e.cache {
		e.cache = false
		s.cached--
	}
	if e.refs == 0 {
		s.free = append(s.free, e.buf)
		e.buf, e.data = nil, nil
	}
}

// unref drops one reference; at zero the entry is kept (prefetched, cached
// or newly admitted by heat) or its buffer is reused. Called with mu held.
func (s *Store) unref(e *entry) {
	e.refs--
	if e.refs > 0 {
		return
	}
	switch {
	case e.gone:
		s.free = append(s.free, e.buf)
		e.buf, e.data = nil, nil
	case e.err != nil:
		s.drop(e) // a failed read is retried by the next Acquire
	case e.spec || e.cache:
	case s.cached < s.cacheCap:
		e.cache = true
		s.cached++
	default:
		if v := s.coldestCached(); v != nil && s.heat.Score(v.id) < s.heat.Score(e.id) {
			s.drop(v)
			e.cache = true
			s.cached++
			return
		}
		s.drop(e)
	}
}

func (s *Store) coldestCached() *entry {
	var best *entry
	var bestHeat float32
	for _, e := range s.entries {
		if !e.cache || e.refs != 0 {
			continue
		}
		if h := s.heat.Score(e.id); best == nil || h < bestHeat {
			best, bestHeat = e, h
		}
	}
	return best
}

// Heat is the histogram the store's cache ranks by (Options.Heat, or its
// own): the engine saves it at close.
func (s *Store) Heat() *Heat { return s.heat }

// SetCacheCap sets the cache's capacity to n experts, dropping the coldest
// cached ones beyond it and forgetting spare buffers beyond the new buffer
// limit; it reports whether memory was let go (the caller may then hand it
// back to the OS).
func (s *Store) SetCacheCap(n int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cacheCap = max(n, 0)
	freed := false
	for s.cached > s.cacheCap {
		v := s.coldestCached()
		if v == nil {
			break // the rest are held by a pass; unref drops them later
		}
		s.drop(v)
	}
	for limit := s.cacheCap + s.prefetchCap + 2*MaxTopK; s.nbufs > limit && len(s.free) > 0; s.nbufs-- {
		s.free[len(s.free)-1] = nil
		s.free = s.free[:len(s.free)-1]
		freed = true
	}
	return freed
}

// Map says where each expert of layers (experts per layer, row-major
// cells [len(layers), experts]) is now: on disk (false only for a missing
// expert of a shard whose Source is a ckpt.Presence, a stream install's),
// in the RAM cache, and its heat.
func (s *Store) Map(layers []int, experts int) (onDisk, cached []bool, heat []float32) {
	n := len(layers) * experts
	onDisk, cached, heat = make([]bool, n), make([]bool, n), make([]float32, n)
	for li, layer := range layers {
		for e := range experts {
			id, k := ckpt.ExpertID{Layer: layer, Expert: e}, li*experts+e
			heat[k] = s.heat.Score(id)
			sp, ok := s.spans[id]
			if !ok {
				continue
			}
			onDisk[k] = true
			if sf := s.shards[sp.Shard]; sf != nil {
				onDisk[k] = sf.Present(sp.Offset, sp.Size)
			}
		}
	}
	pos := make(map[int]int, len(layers))
	for li, layer := range layers {
		pos[layer] = li
	}
	s.mu.Lock()
	for id, e := range s.entries {
		if li, ok := pos[id.Layer]; ok && e.cache && !e.gone && id.Expert < experts {
			cached[li*experts+id.Expert] = true
		}
	}
	s.mu.Unlock()
	return onDisk, cached, heat
}
