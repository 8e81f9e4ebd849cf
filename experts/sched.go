package experts

import (
	"errors"
	"fmt"
	"io/fs"
	"math/bits"
	"slices"
	"sync"
	"time"
)

// maxDrives bounds the drives one store reads from (the mirror included):
// an entry records the drives that filled it in one 64-bit mask.
const maxDrives = 64

// defaultDriveReaders is an expert drive's reads in flight when its probe
// gave none: NVMe and Apple SSDs reach their bandwidth at a queue depth of
// 4 to 16.
const defaultDriveReaders = 8

// readScheduler queues the store's chunk reads and hands each to a reader
// of a drive that holds its expert: demand reads before prefetches, first
// come first served within each. Every drive has its own readers (the
// mirror the store's Readers, an expert drive what its probe chose), and a
// reader takes the next read it can serve as soon as it is free, so each
// read goes to the least-loaded holder — the one with a reader free, which
// a faster drive has more often, in proportion to its bandwidth — and no
// drive waits while a read it could serve is queued. A chunk that fails on
// an expert drive is queued again for the others (the mirror holds every
// expert), so a drive can vanish in the middle of a token.
type readScheduler struct {
	mu     sync.Mutex
	demand []readJob
	spec   []readJob
	drives []*schedDrive // [0] is the mirror
	// mirrorLast: the mirror serves only what no working drive holds
	// (bench: the drives measured alone).
	mirrorLast bool
	closed     bool
}

// schedDrive is one drive's readers and counters. Guarded by the
// scheduler's mu.
type schedDrive struct {
	idx     int
	name    string
	dev     Drive // nil for the mirror
	readers int
	wake    *sync.Cond
	failed  bool

	inflight            int
	since               time.Time
	busy, idle, starved time.Duration
	bytes, reads        int64
	corrupt             int64
}

func newReadScheduler(mirrorReaders int, drives []Drive, mirrorLast bool) (*readScheduler, error) {
	if len(drives)+1 > maxDrives {
		return nil, fmt.Errorf("experts: %d expert drives; at most %d", len(drives), maxDrives-1)
	}
	q := &readScheduler{mirrorLast: mirrorLast && len(drives) > 0}
	now := time.Now()
	add := func(name string, dev Drive, readers int) {
		d := &schedDrive{idx: len(q.drives), name: name, dev: dev, readers: readers, since: now}
		d.wake = sync.NewCond(&q.mu)
		q.drives = append(q.drives, d)
	}
	add("mirror", nil, mirrorReaders)
	for _, dev := range drives {
		r := dev.Readers()
		if r <= 0 {
			r = defaultDriveReaders
		}
		add(dev.Name(), dev, r)
	}
	return q, nil
}

// holds reports whether drive d can read e. Called with mu held.
func (q *readScheduler) holds(d *schedDrive, e *entry) bool {
	if d.failed {
		return false
	}
	if d.dev == nil {
		if !q.mirrorLast {
			return true
		}
		for _, o := range q.drives[1:] {
			if q.holds(o, e) {
				return false
			}
		}
		return true
	}
	return d.idx < len(e.reps) && e.reps[d.idx].Source != nil && e.skip&(1<<d.idx) == 0
}

// push queues jobs (at the front when they are being retried) and wakes
// the drives that can serve them. Called with mu held.
func (q *readScheduler) push(jobs []readJob, front bool) {
	q.account(time.Now())
	for _, j := range jobs {
		qu := &q.spec
		if j.demand {
			qu = &q.demand
		}
		if front {
			*qu = slices.Insert(*qu, 0, j)
		} else {
			*qu = append(*qu, j)
		}
	}
	q.wakeFor(jobs)
}

// wakeFor wakes, on each drive, one waiting reader per job it can serve
// (a reader that is busy looks at the queue before it waits again, so no
// job is left behind; waking every reader for every expert would cost 32
// wake-ups per expert on the mirror alone).
func (q *readScheduler) wakeFor(jobs []readJob) {
	for _, d := range q.drives {
		n := 0
		for _, j := range jobs {
			if n < d.readers && q.holds(d, j.e) {
				n++
			}
		}
		for range n {
			d.wake.Signal()
		}
	}
}

// take removes and returns the first queued job d can serve. Called with
// mu held, after account.
func (q *readScheduler) take(d *schedDrive) (readJob, bool) {
	for _, qu := range []*[]readJob{&q.demand, &q.spec} {
		for i, j := range *qu {
			if q.holds(d, j.e) {
				*qu = slices.Delete(*qu, i, i+1)
				return j, true
			}
		}
	}
	return readJob{}, false
}

// hasWork reports whether a job d can serve is queued. Called with mu held.
func (q *readScheduler) hasWork(d *schedDrive) bool {
	for _, qu := range [][]readJob{q.demand, q.spec} {
		for _, j := range qu {
			if q.holds(d, j.e) {
				return true
			}
		}
	}
	return false
}

// promote moves e's queued prefetch chunks to the demand queue: a batch
// now waits for them. Called with mu held.
func (q *readScheduler) promote(e *entry) {
	var moved []readJob
	q.spec = slices.DeleteFunc(q.spec, func(j readJob) bool {
		if j.e == e {
			j.demand = true
			moved = append(moved, j)
			return true
		}
		return false
	})
	q.demand = append(q.demand, moved...)
}

// account charges the time since each drive's last change to its busy,
// idle and starved totals, by the state before the change about to be
// made. Called with mu held.
func (q *readScheduler) account(now time.Time) {
	for _, d := range q.drives {
		dt := now.Sub(d.since)
		d.since = now
		switch {
		case d.inflight > 0:
			d.busy += dt
		default:
			d.idle += dt
			if !d.failed && q.hasWork(d) {
				d.starved += dt
			}
		}
	}
}

// next blocks until d has a job or the scheduler closes (ok false).
func (q *readScheduler) next(d *schedDrive) (readJob, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for !q.closed {
		q.account(time.Now())
		if j, ok := q.take(d); ok {
			d.inflight++
			return j, true
		}
		d.wake.Wait()
	}
	return readJob{}, false
}

// finished records d's read of j (n bytes, err). A failed read from an
// expert drive drops the drive and queues j again for the others; a read
// from a replica its drive's owner closed (fs.ErrClosed: the drive was
// removed, its later Replica answers are no) is queued again too, without
// failing the drive, and j's expert no longer asks that drive. It reports
// whether j was requeued (the caller then forgets it).
func (q *readScheduler) finished(d *schedDrive, j readJob, n int64, err error, closing bool) (requeued bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.account(time.Now())
	d.inflight--
	d.bytes += n
	if !j.ensure {
		d.reads++ // an Ensure is no chunk read
	}
	if err == nil || d.dev == nil || closing || errors.Is(err, errDropped) {
		return false
	}
	if errors.Is(err, fs.ErrClosed) {
		j.e.skip |= 1 << d.idx
	} else {
		d.failed = true
	}
	q.push([]readJob{j}, true)
	if q.mirrorLast {
		q.drives[0].wake.Broadcast()
	}
	return true
}

// close wakes every reader to exit and returns the jobs still queued.
func (q *readScheduler) close() []readJob {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	for _, d := range q.drives {
		d.wake.Broadcast()
	}
	left := append(q.demand, q.spec...)
	q.demand, q.spec = nil, nil
	return left
}

// markCorrupt counts a checksum failure of e from the drives in mask and
// keeps them from serving e again. Called without mu.
func (q *readScheduler) markCorrupt(e *entry, mask uint64) {
	q.mu.Lock()
	e.skip |= mask
	var devs []*schedDrive
	for m := mask; m != 0; m &= m - 1 {
		d := q.drives[bits.TrailingZeros64(m)]
		d.corrupt++
		devs = append(devs, d)
	}
	q.mu.Unlock()
	for _, d := range devs {
		d.dev.Corrupt(e.id)
	}
}

// stats returns each drive's counters now.
func (q *readScheduler) stats() []DriveStats {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.account(time.Now())
	out := make([]DriveStats, len(q.drives))
	for i, d := range q.drives {
		out[i] = DriveStats{Name: d.name, Readers: d.readers, Bytes: d.bytes, Reads: d.reads,
			Busy: d.busy, Idle: d.idle, Starved: d.starved, Corrupt: d.corrupt, Failed: d.failed}
	}
	return out
}
