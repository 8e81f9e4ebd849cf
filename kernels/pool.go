package kernels

import (
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// pool is a fixed set of helper goroutines, started once per backend. An
// operation runs in one or two phases (the expert FFN: W1/W3 and the
// activation, then W2, which needs all of the first phase's output); each
// phase's rows are cut into chunks, and the chunks into one contiguous part
// per participant (the caller is part 0, helper i part i). A participant
// runs its own part front to back, so that its weights stream from memory
// as one sequence that the prefetchers keep ahead of, then takes chunks from
// the back of the largest part left. The caller waits only for chunks that
// were claimed, never for a helper to wake up: on a busy machine a helper
// may not run for a scheduler time slice, and by then the caller has done
// its part and the helper's.
//
// A call is posted, not sent: the pool holds the latest task in one slot and
// bumps a generation counter that every idle helper watches with plain
// loads, so all of them see it within a cache-line transfer of the post.
// (A buffered channel that 15 helpers polled between runtime.Gosched calls
// started them 11–19 µs after the post on average, measured on a 16-core
// Xeon: most of a call over one 5.8 MB matrix.) A helper that sees no post
// for spinFor parks, and the next post wakes the parked ones. Concurrent
// callers may overwrite each other's post; a call whose post was missed
// is finished by its caller and whoever did see it.
type pool struct {
	helpers int
	gen     atomic.Uint64 // bumped after each post
	_       [120]byte     // gen is read by every idle helper; keep writes of the rest off its line
	slot    atomic.Pointer[task]
	parked  atomic.Int32
	wake    chan struct{}
}

// spinFor is how long an idle helper watches for a post before parking: a
// decode token calls the kernels back to back, and waking a parked
// goroutine costs tens of microseconds.
const spinFor = 100 * time.Microsecond

// yieldEvery is how often a waiting helper or caller lets other goroutines
// have its P (see waiter), so that the engine's readers and the server are
// not locked out while it watches for up to spinFor.
const yieldEvery = 20 * time.Microsecond

func newPool(threads int) *pool {
	p := &pool{helpers: max(threads-1, 0)}
	if p.helpers > 0 {
		p.wake = make(chan struct{}, p.helpers)
		for i := range p.helpers {
			go p.loop(i + 1)
		}
	}
	return p
}

func (p *pool) loop(part int) {
	var seen uint64 // from 0, not gen's value now: a post may come before this goroutine runs
	for {
		seen = p.await(seen)
		if t := p.slot.Load(); t != nil {
			t.participate(t.posted.Load(), part)
		}
	}
}

// post offers t's call, from epoch ep, to every helper.
func (p *pool) post(t *task, ep uint32) {
	t.posted.Store(ep)
	p.slot.Store(t)
	p.gen.Add(1)
	// Sequentially consistent with await's parked.Add then gen.Load: a
	// helper either sees this post or is counted here.
	for n := p.parked.Load(); n > 0; n-- {
		select {
		case p.wake <- struct{}{}:
		default:
			return
		}
	}
}

// await returns the generation once it differs from seen: watching for
// spinFor, then parked until a post wakes it.
func (p *pool) await(seen uint64) uint64 {
	w := newWaiter()
	for {
		if g := p.gen.Load(); g != seen {
			return g
		}
		if !w.pause(spinFor) {
			continue
		}
		p.parked.Add(1)
		if g := p.gen.Load(); g != seen {
			p.parked.Add(-1)
			return g
		}
		<-p.wake // may be a token meant for another helper: then watch again
		p.parked.Add(-1)
		w = newWaiter()
	}
}

// waiter paces a loop that waits for another goroutine by watching memory.
// Watching is plain loads; every yieldEvery it lets other goroutines have
// the P (runtime.Gosched). Not more often: with 15 waiters yielding at once
// on a 16-core machine each Gosched waited microseconds on the scheduler's
// lock, and whatever it waited for waited with it.
type waiter struct {
	start, yielded time.Time
	i              int
}

func newWaiter() waiter {
	now := time.Now()
	return waiter{start: now, yielded: now}
}

// pause is called once per turn of the loop; it reports whether limit has
// passed since the wait began.
func (w *waiter) pause(limit time.Duration) bool {
	w.i++
	if w.i%256 != 0 {
		return false
	}
	now := time.Now()
	if now.Sub(w.start) >= limit {
		return true
	}
	if now.Sub(w.yielded) >= yieldEvery {
		runtime.Gosched()
		w.yielded = time.Now()
	}
	return false
}

// task is one operation in flight. Tasks are recycled through a sync.Pool so
// that a call allocates nothing once warm.
type task struct {
	// exec runs rows [lo, hi) of phase ph; between runs once after phase
	// 0 of a two-phase task (by the participant that finishes it). Both
	// are package-level functions, so no closure.
	exec    func(t *task, ph, lo, hi int, scratch []float32)
	between func(t *task)
	isa     int
	op      uint8
	w, w3   Matrix
	w2      Matrix
	x       []float32
	dst     []float32
	u, g    []float32
	gx      []float32   // g in W2's x layout
	es      []Expert    // opFFNs: the experts, their g one after another
	xStride int         // opFFNs: expert i's x is x[i*xStride:] (0: all share one)
	dsts    [][]float32 // opFFNs: each expert's output
	n       int
	act     Activation

	nphase      int
	rows, chunk [2]int
	phase       int // the open phase
	chunks      int // its chunk count
	scratchLen  int
	bufs        *bufPool

	// epoch numbers the phases of every call: a call with k phases opens
	// epochs e … e+k−1 in turn and closes with e+k. A part is
	// epoch<<32 | lo<<16 | hi (chunk indices of the phase): claiming by
	// compare-and-swap on the whole word means a participant holding an
	// old epoch can never claim (or read the fields of) a later phase's
	// chunks. Before a successful claim only these atomic words are read.
	epoch atomic.Uint32
	// more is 1 while the open phase has a next one: a participant that
	// finds nothing left to claim then waits for it instead of leaving.
	more  atomic.Uint32
	parts []part
	done  atomic.Uint64
	// finished receives one token per call, from whoever completes the
	// last chunk of the last phase.
	finished chan struct{}
	// posted is the first epoch of the call this task was last posted
	// for: a helper that loads the task from the slot late finds that the
	// task has moved on (finished, or recycled for another call), and its
	// claims fail unless that epoch is still open.
	posted atomic.Uint32
}

// part is one participant's claim word on a line of its own: the owner
// claims from it every few microseconds, and sharing a line (or the pair
// the adjacent-line prefetcher fetches together) with the other parts would
// make every claim a cache miss on a many-core machine.
type part struct {
	v atomic.Uint64
	_ [120]byte
}

// maxChunks bounds a phase's chunks to the 16 bits a part has for them.
const maxChunks = 1<<16 - 1

// run executes t's phases (t.nphase, t.rows, t.chunk set by the caller)
// with the caller as part 0.
func (p *pool) run(t *task) {
	if t.finished == nil {
		t.finished = make(chan struct{}, 1)
	}
	if len(t.parts) != p.helpers+1 {
		// Once per task: a task serves one backend, hence one pool.
		t.parts = make([]part, p.helpers+1)
	}
	for ph := range t.nphase {
		t.chunk[ph] = max(t.chunk[ph], (t.rows[ph]+maxChunks-1)/maxChunks, 1)
	}
	ep := t.epoch.Load() + 1
	t.open(0, ep)
	if p.helpers > 0 && t.chunks > 1 {
		p.post(t, ep)
	}
	t.participate(ep, 0)
	// The others' last chunks are short: wait for them awake (a parked
	// goroutine takes tens of microseconds to wake), then collect the
	// token, which is then there or on its way.
	closed := ep + uint32(t.nphase)
	for w := newWaiter(); t.epoch.Load() != closed && !w.pause(spinFor); {
	}
	<-t.finished
}

// open makes phase ph claimable under epoch ep: its chunks cut into one
// contiguous part per participant. Every claim of the previous phase has completed.
func (t *task) open(ph int, ep uint32) {
	t.phase = ph
	t.chunks = (t.rows[ph] + t.chunk[ph] - 1) / t.chunk[ph]
	t.done.Store(0)
	np := len(t.parts)
	for i := range np {
		lo, hi := i*t.chunks/np, (i+1)*t.chunks/np
		t.parts[i].v.Store(uint64(ep)<<32 | uint64(lo)<<16 | uint64(hi))
	}
	if ph+1 < t.nphase {
		t.more.Store(1)
	} else {
		t.more.Store(0)
	}
	t.epoch.Store(ep) // publishes the fields above to claimers
}

// participate runs chunks of the phases from epoch ep on, own part first.
func (t *task) participate(ep uint32, me int) {
	var buf *[]float32
	var bufs *bufPool
	for {
		t.claimAll(ep, me, &buf, &bufs)
		// Nothing left to claim in ep. If a later phase of this call is to
		// come, wait for whoever finishes ep to open it.
		e := t.epoch.Load()
		for w := newWaiter(); e == ep && t.more.Load() == 1; e = t.epoch.Load() {
			w.pause(spinFor) // no limit: the phase is claimed, so it ends soon
		}
		if e != ep+1 {
			break
		}
		ep = e // claims fail at once if ep+1 closed the call instead
	}
	if buf != nil {
		bufs.put(buf)
	}
}

// ownBatch is how many chunks an owner claims at once while at least twice
// that many are left in its part: one claim and one cgo call per ~64 KiB in
// the steady state, while the end of a phase, where everyone waits for the
// last chunk, is cut into single chunks (see chunkRows).
const ownBatch = 2

// claimAll runs chunks of phase ep until none is left to claim: its own
// part from the front, then the last chunk of the largest part left.
func (t *task) claimAll(ep uint32, me int, buf **[]float32, bufs **bufPool) {
	parts := t.parts // set once, before the task was first posted
	for {
		c, n := -1, 1
		if v := parts[me].v.Load(); uint32(v>>32) == ep && v>>16&0xffff < v&0xffff {
			if v&0xffff-v>>16&0xffff >= 2*ownBatch {
				n = ownBatch
			}
			if !parts[me].v.CompareAndSwap(v, v+uint64(n)<<16) {
				continue
			}
			c = int(v >> 16 & 0xffff)
		} else {
			best, bv := -1, uint64(0)
			for j := range parts {
				v := parts[j].v.Load()
				if uint32(v>>32) == ep && v>>16&0xffff < v&0xffff &&
					(best < 0 || v&0xffff-v>>16&0xffff > bv&0xffff-bv>>16&0xffff) {
					best, bv = j, v
				}
			}
			if best < 0 {
				return
			}
			if !parts[best].v.CompareAndSwap(bv, bv-1) {
				continue
			}
			c = int(bv&0xffff) - 1
		}
		t.runChunks(ep, c, n, buf, bufs)
	}
}

// runChunks runs chunks [c, c+n) of the phase open under ep, which the
// caller has claimed (so the task's fields are that phase's until they are
// done), and completes the phase, or the call, if they were the last.
func (t *task) runChunks(ep uint32, c, n int, buf **[]float32, bufs **bufPool) {
	if *buf == nil && t.scratchLen > 0 {
		*bufs = t.bufs
		*buf = t.bufs.get(t.scratchLen)
	}
	var scratch []float32
	if *buf != nil {
		scratch = **buf
	}
	ph, chunks, finished := t.phase, t.chunks, t.finished
	lo := c * t.chunk[ph]
	t.exec(t, ph, lo, min(lo+n*t.chunk[ph], t.rows[ph]), scratch)
	if t.done.Add(uint64(n)) != uint64(chunks) {
		return // from here on another participant may have moved the task on
	}
	if ph+1 < t.nphase {
		if t.between != nil {
			t.between(t)
		}
		t.open(ph+1, ep+1)
		return
	}
	t.epoch.Store(ep + 1) // closes the call: late participants leave
	finished <- struct{}{}
}

// bufPool recycles float32 scratch buffers (per-call intermediates and
// per-worker row buffers) so that steady-state calls do not allocate.
type bufPool struct{ p sync.Pool }

func (b *bufPool) get(n int) *[]float32 {
	if v, ok := b.p.Get().(*[]float32); ok {
		if cap(*v) >= n {
			*v = (*v)[:n]
			return v
		}
		// Too small: let it go; the larger one replaces it.
	}
	// Capacities are powers of two so that the differently sized buffers
	// of one operation (x layouts, intermediates) can stand in for each other.
	s := make([]float32, n, 1<<bits.Len(uint(n-1)))
	return &s
}

// put returns buffers from get; nil ones (not taken) are skipped.
func (b *bufPool) put(vs ...*[]float32) {
	for _, v := range vs {
		if v != nil {
			b.p.Put(v)
		}
	}
}
