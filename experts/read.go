package experts

import (
	"fmt"
	"math/bits"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/internal/directio"
)

// The expert store's readers: each drive's goroutines take chunk reads from
// the scheduler (readsched.go), read them from the mirror or a replica, and
// settle the entry whose bytes they fill.

// reader is one of drive d's readers: it reads the jobs the scheduler
// hands it until the store closes.
func (s *Store) reader(d *schedDrive) {
	defer s.wg.Done()
	for {
		j, ok := s.sched.next(d)
		if !ok {
			return
		}
		if j.ensure {
			// Not the drive's read: its failure is the fetch's, not the
			// drive's, and the expert's, not a chunk's to retry.
			err := s.ensure(j)
			s.sched.finished(d, j, 0, nil, false)
			if err != nil {
				s.chunkDone(j.e, err, 0, 0)
			}
			continue
		}
		var n int64
		var err error
		if d.dev == nil {
			n, err = s.read(j)
		} else {
			n, err = s.readReplica(d, j)
		}
		if s.sched.finished(d, j, n, err, s.ctx.Err() != nil) {
			continue
		}
		s.chunkDone(j.e, err, n, d.idx)
	}
}

// chunkDone records one chunk, read from drive d; the last one checks the
// expert (its replicas' checksum when a drive filled part of it, then its
// scales) and publishes the entry.
func (s *Store) chunkDone(e *entry, err error, n int64, d int) {
	s.stats.diskBytes.Add(n)
	e.mu.Lock()
	if e.err == nil {
		e.err = err
	}
	if err == nil && d > 0 {
		e.fromRep |= 1 << d
	}
	e.pending--
	last := e.pending == 0
	from := e.fromRep
	e.mu.Unlock()
	if !last {
		return
	}
	s.stats.reads.Add(1)
	if e.err == nil {
		sp := s.spans[e.id]
		lo := s.base(sp)
		e.data = e.buf[sp.Offset-lo : sp.Offset-lo+sp.Size : sp.Offset-lo+sp.Size]
		bad := from != 0 && SpanCRC(e.data) != e.reps[bits.TrailingZeros64(from)].CRC32C
		if bad && s.ctx.Err() != nil {
			e.err, e.data = ErrClosed, nil // closing: nothing reads it again
		} else if bad {
			// A bad byte on a drive: read the expert again from the
			// others (the mirror holds it) and let the drive repair it.
			s.sched.markCorrupt(e, from)
			s.stats.corrupt.Add(1)
			e.data = nil
			jobs := s.jobs(e, true)
			e.mu.Lock()
			e.fromRep, e.pending = 0, len(jobs)
			e.mu.Unlock()
			s.sched.mu.Lock()
			s.sched.push(jobs, true)
			s.sched.mu.Unlock()
			return
		} else if err := CheckScales(e.id, sp.Shard, e.data); err != nil {
			// Checked once per read from disk (a cached expert is not read again).
			e.err, e.data = err, nil
		}
	}
	// Drop the read's reference before waking waiters, so that a batch
	// released right after Wait sees the entry as its own to cache.
	s.mu.Lock()
	s.unref(e)
	s.mu.Unlock()
	close(e.done)
}

// base is the file offset of the first byte of an entry's buffer: the span
// widened to the alignment of direct reads when its shard is read direct.
func (s *Store) base(sp ckpt.ExpertSpan) int64 {
	if s.shards[sp.Shard].Direct() {
		return directio.AlignDown(sp.Offset)
	}
	return sp.Offset
}

// readable says whether a chunk of e is still to be read: not after Close
// (ErrClosed), nor for a dropped prefetch (errDropped).
func (s *Store) readable(e *entry) error {
	if err := s.ctx.Err(); err != nil {
		return ErrClosed
	}
	if e.dropped.Load() {
		return errDropped
	}
	return nil
}

// ensure makes e's span present (its shard's Source's Ensure: a fetch in a
// stream install, a presence check in a full one) and queues its chunks in
// place of the ensure job, at demand priority when a batch waits for it by
// now.
func (s *Store) ensure(j readJob) error {
	e := j.e
	if err := s.readable(e); err != nil {
		return err
	}
	sp := s.spans[e.id]
	if err := s.shards[sp.Shard].Ensure(s.ctx, sp.Offset, sp.Size); err != nil {
		return fmt.Errorf("experts: fetch %s (%s bytes %d to %d): %w", e.id, sp.Shard, sp.Offset, sp.Offset+sp.Size, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	chunks := s.chunks(e, j.demand || !e.spec)
	e.mu.Lock()
	e.pending += len(chunks) - 1 // the chunks replace the ensure job
	e.mu.Unlock()
	s.sched.mu.Lock()
	defer s.sched.mu.Unlock()
	if s.sched.closed {
		e.mu.Lock()
		e.pending -= len(chunks) - 1
		e.mu.Unlock()
		return ErrClosed
	}
	s.sched.push(chunks, false)
	return nil
}

// read fills one chunk of e's buffer from its shard: the buffer holds the
// file range covering the span (aligned for direct descriptors, since the
// span need not start on a block boundary). It returns the bytes read from
// the device.
func (s *Store) read(j readJob) (int64, error) {
	e := j.e
	if err := s.readable(e); err != nil {
		return 0, err
	}
	sp := s.spans[e.id]
	sf := s.shards[sp.Shard]
	base := s.base(sp)
	s.meter.Change(1)
	got, err := sf.ReadFull(e.buf[j.lo-base:j.hi-base], j.lo)
	s.meter.Change(-1)
	if err != nil {
		return got, fmt.Errorf("experts: read %s from %s bytes %d to %d: %w", e.id, sp.Shard, sp.Offset, sp.Offset+sp.Size, err)
	}
	if need := min(j.hi, sp.Offset+sp.Size) - j.lo; got < need {
		return got, ckpt.TruncatedError(e.id, sp, j.lo+got)
	}
	if !sf.Direct() && s.mode != directio.Buffered {
		sf.DropBehind(j.lo, j.hi-j.lo)
	}
	return got, nil
}

// readReplica fills one chunk of e's buffer from drive d's replica, which
// holds the expert's ReplicaRange: chunk [lo, hi) of the shard lies at
// Offset + lo − directio.AlignDown(span offset) in it.
func (s *Store) readReplica(d *schedDrive, j readJob) (int64, error) {
	e := j.e
	if err := s.readable(e); err != nil {
		return 0, err
	}
	sp := s.spans[e.id]
	base := s.base(sp)
	r := e.reps[d.idx]
	s.meter.Change(1)
	err := r.Source.ReadAt(s.ctx, e.buf[j.lo-base:j.hi-base], r.Offset+j.lo-directio.AlignDown(sp.Offset))
	s.meter.Change(-1)
	if err != nil {
		return 0, fmt.Errorf("experts: read %s from drive %s: %w", e.id, d.name, err)
	}
	return j.hi - j.lo, nil
}
