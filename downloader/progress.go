package downloader

import (
	"sort"
	"sync"
	"time"
)

// Phase is the stage a transfer is in.
type Phase string

const (
	PhasePlan     Phase = "plan"     // listing files, reading shard headers
	PhaseDownload Phase = "download" // range transfers
	PhaseVerify   Phase = "verify"   // hashing complete files
	PhasePaused   Phase = "paused"   // by Pause, or by a full disk (Err says so)
	PhaseWaiting  Phase = "waiting"  // for the hub before a retry (Message says why and how long)
	PhaseDone     Phase = "done"
)

// FileState is where one file of a transfer stands.
type FileState string

const (
	FilePending   FileState = "pending"
	FileFetching  FileState = "fetching"
	FileVerifying FileState = "verifying"
	FileVerified  FileState = "verified"
	FileFailed    FileState = "failed"
	// FilePartial: everything this transfer wanted is there, but the file
	// has holes (a stream-mode shard), so it cannot be hashed yet.
	FilePartial FileState = "partial"
)

// FileProgress is one file's share of a transfer.
type FileProgress struct {
	Name        string
	Done, Total int64 // bytes of this transfer's work in the file
	State       FileState
}

// Event is one progress report. Done and Total count the bytes of the
// transfer's work; Rate (bytes/s) and ETA are measured over this run.
type Event struct {
	Phase       Phase
	Message     string
	Done, Total int64
	Rate        float64
	ETA         time.Duration
	Files       []FileProgress
	Err         error // set with PhasePaused for a full disk
	// RetryIn is set with PhaseWaiting: how long until the next try;
	// RateLimited says the hub asked us to slow down (429).
	RetryIn     time.Duration
	RateLimited bool
}

// tracker turns byte counts into the event stream. Events are delivered one
// at a time (under mu) and byte-count events at most every 100 ms.
type tracker struct {
	fn func(Event)

	mu       sync.Mutex
	phaseNow Phase
	msg      string
	start    time.Time
	startAt  int64
	files    map[string]*FileProgress
	last     time.Time
	// waiters count the retries waiting now; before is the phase to go
	// back to when the last one is done.
	waiters int
	before  Phase
}

func newTracker(fn func(Event)) *tracker {
	return &tracker{fn: fn, files: map[string]*FileProgress{}}
}

// begin starts a transfer of the given per-file totals and present bytes.
func (t *tracker) begin(total, present map[string]int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.files = map[string]*FileProgress{}
	var done int64
	for name, n := range total {
		fp := &FileProgress{Name: name, Total: n, Done: present[name], State: FilePending}
		t.files[name] = fp
		done += fp.Done
	}
	t.start, t.startAt = time.Now(), done
	t.phaseNow, t.msg = PhaseDownload, ""
	t.emitLocked(nil)
}

func (t *tracker) add(file string, n int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fp, ok := t.files[file]
	if !ok {
		return // an on-demand fetch outside the transfer
	}
	fp.Done = min(fp.Done+n, fp.Total)
	fp.State = FileFetching
	if time.Since(t.last) >= 100*time.Millisecond {
		t.emitLocked(nil)
	}
}

// set changes a file's state and, when done >= 0, its done bytes (a failed
// checksum drops them).
func (t *tracker) set(file string, done int64, st FileState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if fp, ok := t.files[file]; ok {
		if done >= 0 {
			fp.Done = done
		}
		fp.State = st
		t.emitLocked(nil)
	}
}

// waiting reports that a retry waits d for the hub.
func (t *tracker) waiting(d time.Duration, rateLimited bool, hint string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.waiters == 0 {
		t.before = t.phaseNow
	}
	t.waiters++
	t.phaseNow, t.msg = PhaseWaiting, WaitMessage(d, rateLimited)
	if hint != "" {
		t.msg = hint + "; " + t.msg
	}
	t.emitWait(nil, d, rateLimited)
}

// waited ends a wait; the last one restores the phase from before.
func (t *tracker) waited() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.waiters--
	if t.waiters == 0 && t.phaseNow == PhaseWaiting {
		t.phaseNow, t.msg = t.before, ""
		t.emitLocked(nil)
	}
}

func (t *tracker) phase(p Phase, msg string) { t.phaseErr(p, msg, nil) }

func (t *tracker) phaseErr(p Phase, msg string, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.phaseNow, t.msg = p, msg
	t.emitLocked(err)
}

func (t *tracker) emitLocked(err error) { t.emitWait(err, 0, false) }

func (t *tracker) emitWait(err error, retryIn time.Duration, rateLimited bool) {
	t.last = time.Now()
	if t.fn == nil {
		return
	}
	ev := Event{Phase: t.phaseNow, Message: t.msg, Err: err, RetryIn: retryIn, RateLimited: rateLimited}
	names := make([]string, 0, len(t.files))
	for name := range t.files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fp := *t.files[name]
		ev.Files = append(ev.Files, fp)
		ev.Done += fp.Done
		ev.Total += fp.Total
	}
	if el := time.Since(t.start).Seconds(); !t.start.IsZero() && el > 0.5 {
		ev.Rate = float64(ev.Done-t.startAt) / el
		if ev.Rate > 0 {
			ev.ETA = time.Duration(float64(ev.Total-ev.Done) / ev.Rate * float64(time.Second))
		}
	}
	t.fn(ev)
}
