package downloader

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/deltafin/deltafin/internal/flock"
)

// Options configure a Mirror. Zero values take the defaults in brackets.
type Options struct {
	HubOptions
	// Dir is the mirror's root: the repository's files at their own names,
	// and .deltafin/ with the manifest and the presence maps.
	Dir string
	// Jobs is how many range requests run at once in a bulk transfer [8].
	Jobs int
	// ChunkSize is the unit of bulk transfers [64 MiB].
	ChunkSize int64
	// CommitEvery is the unit of durable progress [8 MiB]: a range being
	// fetched is fsynced and marked present every CommitEvery bytes, so a
	// kill, a crash or a full disk loses less than that per stream.
	CommitEvery int64
	// CommitInterval is the same unit in time [2s]: a range being fetched
	// is also made durable once this long has passed since it last was,
	// so that on a slow link (300 kB/s takes 28 s for 8 MiB) a kill loses
	// seconds of transfer, not CommitEvery bytes. Options.Clock tells it.
	CommitInterval time.Duration
	// RetryBudget is how long one range keeps retrying transient failures
	// (timeouts, 5xx, dropped connections) without progress [2m];
	// RateLimitBudget is the same while the hub answers 429 [10m]. Any byte
	// that arrives resets both.
	RetryBudget, RateLimitBudget time.Duration
	// Attempts, when > 0, also bounds the tries without progress [no bound].
	Attempts int
	// BackoffBase and BackoffMax shape the exponential backoff with full
	// jitter between tries [500ms, 30s]; a Retry-After (429, 503) replaces
	// the backoff.
	BackoffBase, BackoffMax time.Duration
	// Clock times the retries [the real clock]; Jitter returns uniform
	// numbers in [0, 1) for the backoff [math/rand/v2, randomly seeded].
	Clock  Clock
	Jitter func() float64
	// StallTimeout aborts (and retries) a request that delivers no byte for
	// this long [15s]: a transfer that stalls is noticed in seconds, and a
	// slow one (any byte in 15 s) is never cut.
	StallTimeout time.Duration
	// Progress receives the transfer's progress events, one at a time.
	Progress func(Event)
	// ReadOnly opens the mirror for a dry run: nothing is created or
	// written (no directory, lock, manifest or map), missing bytes that Plan
	// reads come from the hub into memory, and writers fail with ErrReadOnly.
	ReadOnly bool
	// Repair makes the first Plan call Repair first: every complete file is
	// hashed again by the next Fetch and every shard header fetched again.
	Repair bool
	// WaitOnDiskFull makes Fetch pause on a full disk (a PhasePaused event
	// carrying ErrDiskFull) and continue after Resume, as the menu-bar app
	// wants; otherwise Fetch returns ErrDiskFull, as the CLI wants.
	WaitOnDiskFull bool
	// AllowUnverified lets the engine's reads (a Source's Ensure and
	// ReadAt) use bytes that cannot be verified (state.go); without it
	// they fail with ErrUnverified after the bytes are fetched.
	AllowUnverified bool
	// Disagreement receives a verifier disagreement: a window fetched
	// again came back byte-identical and still did not give the file's Xet
	// hash, so the check itself may be what is wrong. The bytes stay
	// present, not verified, and the transfer goes on; the caller logs it.
	Disagreement func(Disagreement)
}

func (o *Options) defaults() {
	if o.Jobs <= 0 {
		o.Jobs = 8
	}
	if o.ChunkSize <= 0 {
		o.ChunkSize = 64 << 20
	}
	if o.CommitEvery <= 0 {
		o.CommitEvery = 8 << 20
	}
	if o.CommitInterval <= 0 {
		o.CommitInterval = 2 * time.Second
	}
	if o.RetryBudget <= 0 {
		o.RetryBudget = 2 * time.Minute
	}
	if o.RateLimitBudget <= 0 {
		o.RateLimitBudget = 10 * time.Minute
	}
	if o.Clock == nil {
		o.Clock = realClock{}
	}
	if o.Jitter == nil {
		o.Jitter = defaultJitter
	}
	if o.BackoffBase <= 0 {
		o.BackoffBase = 500 * time.Millisecond
	}
	if o.BackoffMax <= 0 {
		o.BackoffMax = 30 * time.Second
	}
	if o.StallTimeout <= 0 {
		o.StallTimeout = DefaultStallTimeout
	}
}

// DefaultStallTimeout is Options.StallTimeout's default.
const DefaultStallTimeout = 15 * time.Second

// metaDir holds the mirror's own state, next to the repository's files.
const metaDir = ".deltafin"

// A Mirror is the local copy of one hub repository at one revision. Files
// are sparse and filled range by range; Ensure makes a range present, for
// bulk transfers (Fetch) and for the engine's on-demand reads alike. A
// Mirror is safe for concurrent use.
type Mirror struct {
	opts Options
	hub  *hub
	gate gate
	prog *tracker
	lock *os.File // flock held while open
	// fetchMu runs one Fetch at a time: a transfer's progress events
	// describe one set of work.
	fetchMu sync.Mutex
	// repairOnce runs Options.Repair before the first Plan.
	repairOnce sync.Once

	mu      sync.Mutex
	entries map[string]Entry // the mirrored files, from the manifest
	files   map[string]*fileState
}

// fileState is one mirrored file: its open handle, its presence map and the
// ranges being fetched right now (so concurrent callers for the same bytes
// wait for one request instead of issuing their own).
type fileState struct {
	entry    Entry
	path     string
	mapPath  string
	readOnly bool // of a ReadOnly mirror: never persisted

	saveMu  sync.Mutex // orders presence map writes (see persist)
	mu      sync.Mutex
	f       *os.File
	pres    presence
	flights []*flight
	// xetSkip are ranges (the whole file after an unusable Xet answer)
	// that reads do not try to check again in this process.
	xetSkip rangeSet
}

type flight struct {
	r    Range
	done chan struct{}
}

// Open opens (creating if needed) the mirror in opts.Dir. It reads the saved
// manifest, if any, so that Ensure and ReadAt work without listing the hub.
func Open(opts Options) (*Mirror, error) {
	opts.defaults()
	if opts.Dir == "" {
		return nil, errors.New("downloader: empty mirror directory")
	}
	m := &Mirror{
		opts:    opts,
		hub:     newHub(opts.HubOptions, opts.Jobs),
		prog:    newTracker(opts.Progress),
		entries: map[string]Entry{},
		files:   map[string]*fileState{},
	}
	m.gate.init()
	m.hub.now = opts.Clock.Now
	if opts.ReadOnly {
		return openReadOnly(m)
	}
	if err := os.MkdirAll(filepath.Join(opts.Dir, metaDir, "presence"), 0o755); err != nil {
		return nil, fmt.Errorf("downloader: create mirror: %w", err)
	}
	lock, err := lockDir(filepath.Join(opts.Dir, metaDir, "lock"))
	if err != nil {
		return nil, err
	}
	m.lock = lock
	if err := m.loadManifest(); err != nil {
		lock.Close()
		return nil, err
	}
	return m, nil
}

// ErrBusy: another process has the mirror open.
var ErrBusy = errors.New("downloader: the mirror is in use")

// lockDir takes an exclusive advisory lock, so that two processes never
// write the same presence maps (each would drop the other's ranges). The
// kernel releases it when the process dies, kill -9 included.
func lockDir(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, diskError(err, path)
	}
	if err := flock.Try(f); err != nil {
		f.Close()
		if errors.Is(err, flock.ErrHeld) {
			return nil, fmt.Errorf("%w: another deltafin process (the app or a setup) is using %s; quit it or wait for it to finish", ErrBusy, filepath.Dir(filepath.Dir(path)))
		}
		return nil, fmt.Errorf("downloader: lock %s: %w", path, err)
	}
	return f, nil
}

// Dir returns the mirror's root directory: the model directory the engine opens.
func (m *Mirror) Dir() string { return m.opts.Dir }

// Close closes the mirror's files.
func (m *Mirror) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var first error
	for _, fs := range m.files {
		fs.mu.Lock()
		if fs.f != nil {
			if err := fs.f.Close(); err != nil && first == nil {
				first = err
			}
			fs.f = nil
		}
		fs.mu.Unlock()
	}
	if m.lock != nil {
		m.lock.Close() // releases the flock
		m.lock = nil
	}
	return first
}

type manifest struct {
	Version  int     `json:"version"`
	Repo     string  `json:"repo"`
	Revision string  `json:"revision"`
	Files    []Entry `json:"files"`
}

func (m *Mirror) manifestPath() string { return filepath.Join(m.opts.Dir, metaDir, "manifest.json") }

func (m *Mirror) loadManifest() error {
	b, err := os.ReadFile(m.manifestPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("downloader: read manifest: %w", err)
	}
	var man manifest
	if err := json.Unmarshal(b, &man); err != nil || man.Version != 1 {
		// A damaged manifest is rebuilt from the hub by the next Plan.
		return nil
	}
	if man.Repo != m.opts.Repo || man.Revision != m.opts.Revision {
		return nil
	}
	for _, e := range man.Files {
		if !safePath(e.Path) || e.Size < 0 {
			return nil
		}
	}
	m.setEntries(man.Files)
	return nil
}

func (m *Mirror) saveManifest(entries []Entry) error {
	if m.opts.ReadOnly {
		return nil // a dry run keeps the listing in memory
	}
	b, err := json.MarshalIndent(manifest{Version: 1, Repo: m.opts.Repo, Revision: m.opts.Revision, Files: entries}, "", " ")
	if err != nil {
		return fmt.Errorf("downloader: encode manifest: %w", err)
	}
	if err := writeFileAtomic(m.manifestPath(), b); err != nil {
		return diskError(err, m.manifestPath())
	}
	return nil
}

func (m *Mirror) setEntries(entries []Entry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entries = make(map[string]Entry, len(entries))
	for _, e := range entries {
		m.entries[e.Path] = e
	}
}

func (m *Mirror) hasManifest() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.entries) > 0
}

func safePath(p string) bool {
	return p != "" && !strings.HasPrefix(p, "/") && !strings.Contains("/"+p+"/", "/../") &&
		!strings.HasPrefix(p, metaDir+"/") && !strings.Contains(p, "\\")
}

// file returns the state of a mirrored file, loading its presence map.
func (m *Mirror) file(name string) (*fileState, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if fs, ok := m.files[name]; ok {
		return fs, nil
	}
	e, ok := m.entries[name]
	if !ok {
		return nil, fmt.Errorf("%w: %s is not a file of %s@%s in this mirror (run deltafin setup)", ErrNotFound, name, m.opts.Repo, shortRev(m.opts.Revision))
	}
	fs := &fileState{
		entry:    e,
		path:     filepath.Join(m.opts.Dir, filepath.FromSlash(name)),
		mapPath:  filepath.Join(m.opts.Dir, metaDir, "presence", filepath.FromSlash(name)+".json"),
		readOnly: m.opts.ReadOnly,
	}
	p, err := loadPresence(fs.mapPath, e.Size)
	if err != nil {
		return nil, err
	}
	// The map may only describe bytes of a file that still has its size.
	if st, err := os.Stat(fs.path); err != nil || st.Size() != e.Size {
		p = presence{Version: presenceVersion, Size: e.Size}
	} else if p.Verified != "" && p.VerifiedMtime != 0 && st.ModTime().UnixNano() != p.VerifiedMtime {
		// Changed on disk since it was verified: hash it again.
		p.Verified, p.VerifiedMtime = "", 0
	}
	fs.pres = p
	m.files[name] = fs
	return fs, nil
}

// open returns the file's handle, creating the sparse file at its full size.
// Called with fs.mu held.
func (fs *fileState) open() (*os.File, error) {
	if fs.f != nil {
		return fs.f, nil
	}
	if err := os.MkdirAll(filepath.Dir(fs.path), 0o755); err != nil {
		return nil, diskError(err, fs.path)
	}
	if err := os.MkdirAll(filepath.Dir(fs.mapPath), 0o755); err != nil {
		return nil, diskError(err, fs.mapPath)
	}
	f, err := os.OpenFile(fs.path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, diskError(err, fs.path)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, diskError(err, fs.path)
	}
	if st.Size() != fs.entry.Size {
		// A new file, or one changed behind our back: whatever the old map
		// says is void, and must be void on disk before the file is sized
		// (else a crash would leave a map naming holes).
		fs.pres = presence{Version: presenceVersion, Size: fs.entry.Size}
		if err := fs.pres.save(fs.mapPath); err != nil {
			f.Close()
			return nil, diskError(err, fs.mapPath)
		}
		// Truncate makes a sparse file: holes take no space until written.
		if err := f.Truncate(fs.entry.Size); err != nil {
			f.Close()
			return nil, diskError(err, fs.path)
		}
	}
	fs.f = f
	return f, nil
}

// diskError marks local I/O failures: a full disk (or quota) becomes
// ErrDiskFull, and any local failure is permanent (retrying the network
// cannot fix it).
func diskError(err error, path string) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EFBIG) {
		return permanent(fmt.Errorf("%w writing %s: free some space and run again; everything downloaded is kept but the last few MiB of each transfer in flight (%v)", ErrDiskFull, path, err))
	}
	return permanent(fmt.Errorf("downloader: %s: %w", path, err))
}

// Present reports how many bytes of [off, off+n) of file are on disk.
func (m *Mirror) Present(file string, off, n int64) (int64, error) {
	fs, err := m.file(file)
	if err != nil {
		return 0, err
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.pres.Ranges.overlap(Range{off, off + n}), nil
}

// Ensure makes bytes [off, off+n) of file present in the mirror, fetching
// what is missing with HTTP range requests (one request per missing run of
// bytes) into the sparse file, fsyncing it and only then marking the range
// in the presence map. Concurrent callers asking for the same bytes share
// one request. It is the on-demand fetcher of stream mode; pausing bulk
// transfers does not stop it, because a generation waits on it. A cancelled
// ctx fails it even when nothing is missing, as it fails a local read.
func (m *Mirror) Ensure(ctx context.Context, file string, off, n int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	fs, err := m.file(file)
	if err != nil {
		return err
	}
	if off < 0 || n < 0 || off+n > fs.entry.Size {
		return fmt.Errorf("%w: %s: range [%d, %d) is outside the %d-byte file", ErrProtocol, file, off, off+n, fs.entry.Size)
	}
	if m.opts.ReadOnly {
		if got, _ := m.Present(file, off, n); got < n {
			return fmt.Errorf("%w: %s: bytes [%d, %d) are missing", ErrReadOnly, file, off, off+n)
		}
		return nil
	}
	return m.ensure(ctx, fs, Range{off, off + n})
}

// ReadAt fills p with the bytes of file at off, fetching them first if they
// are missing. It has the shape of the engine's byte Source.
func (m *Mirror) ReadAt(ctx context.Context, file string, p []byte, off int64) error {
	if m.opts.ReadOnly {
		if err := ctx.Err(); err != nil {
			return err
		}
		fs, err := m.file(file)
		if err != nil {
			return err
		}
		return m.readOnlyAt(ctx, fs, p, off)
	}
	if err := m.Ensure(ctx, file, off, int64(len(p))); err != nil {
		return err
	}
	fs, _ := m.file(file)
	fs.mu.Lock()
	f, err := fs.open()
	fs.mu.Unlock()
	if err != nil {
		return err
	}
	if _, err := f.ReadAt(p, off); err != nil {
		return fmt.Errorf("downloader: read %s at %d: %w", file, off, err)
	}
	return nil
}

func (m *Mirror) ensure(ctx context.Context, fs *fileState, r Range) error {
	for {
		fs.mu.Lock()
		miss := fs.pres.Ranges.missing(r)
		if len(miss) == 0 {
			fs.mu.Unlock()
			return nil
		}
		if fl := fs.overlapping(miss); fl != nil {
			fs.mu.Unlock()
			select {
			case <-fl.done:
				continue // it may have failed: look again
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if _, err := fs.open(); err != nil {
			fs.mu.Unlock()
			return err
		}
		mine := make([]*flight, len(miss))
		for i, mr := range miss {
			mine[i] = &flight{r: mr, done: make(chan struct{})}
		}
		fs.flights = append(fs.flights, mine...)
		fs.mu.Unlock()

		var err error
		for _, fl := range mine {
			if err = m.fetch(ctx, fs, fl.r); err != nil {
				break
			}
		}
		fs.mu.Lock()
		fs.flights = removeFlights(fs.flights, mine)
		fs.mu.Unlock()
		for _, fl := range mine {
			close(fl.done)
		}
		if err != nil {
			return err
		}
	}
}

func (fs *fileState) overlapping(miss []Range) *flight {
	for _, fl := range fs.flights {
		for _, r := range miss {
			if fl.r.Start < r.End && r.Start < fl.r.End {
				return fl
			}
		}
	}
	return nil
}

func removeFlights(all, mine []*flight) []*flight {
	out := all[:0]
	for _, fl := range all {
		keep := true
		for _, x := range mine {
			if fl == x {
				keep = false
			}
		}
		if keep {
			out = append(out, fl)
		}
	}
	return out
}

// fetch downloads r into the file, retrying transient failures from the
// byte where the last attempt stopped; copyRange makes the bytes durable
// and present as they arrive.
func (m *Mirror) fetch(ctx context.Context, fs *fileState, r Range) error {
	pos := r.Start
	rt := retrier{m: m, what: fs.entry.Path + " bytes " + r.String()}
	for pos < r.End {
		n, err := m.copyRange(ctx, fs, pos, r.End)
		pos += n
		if err == nil {
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if isPermanent(err) {
			return err
		}
		if n > 0 {
			rt.progressed()
		}
		rt.what = fs.entry.Path + " bytes " + Range{pos, r.End}.String()
		if err := rt.wait(ctx, err); err != nil {
			return err
		}
	}
	return nil
}

// commit makes r, whose bytes are written, durable: the data first, then
// the map that points at it. The fsync runs without the lock so that
// readers of present ranges (the engine) never wait for it.
func (m *Mirror) commit(fs *fileState, r Range) error {
	fs.mu.Lock()
	f := fs.f
	fs.mu.Unlock()
	if f == nil {
		return fmt.Errorf("downloader: %s was closed during a transfer", fs.entry.Path)
	}
	if err := f.Sync(); err != nil {
		return diskError(err, fs.path)
	}
	fs.mu.Lock()
	fs.pres.Ranges = fs.pres.Ranges.add(r)
	fs.mu.Unlock()
	return fs.persist()
}

// persist writes the file's presence map as it is now. saveMu orders the
// writers and each writes the newest state, so a slow writer never puts an
// older map back. The map on disk may lag the one in memory, never lead it:
// the bytes a range names are fsynced before the range enters memory.
func (fs *fileState) persist() error {
	if fs.readOnly {
		return fmt.Errorf("%w: %s", ErrReadOnly, fs.mapPath)
	}
	fs.saveMu.Lock()
	defer fs.saveMu.Unlock()
	fs.mu.Lock()
	snap := fs.pres
	snap.Ranges = append(rangeSet(nil), fs.pres.Ranges...)
	fs.mu.Unlock()
	if err := snap.save(fs.mapPath); err != nil {
		return diskError(err, fs.mapPath)
	}
	return nil
}

// errStalled is the transient error of a request that stopped delivering.
var errStalled = errors.New("downloader: transfer stalled")

// copyRange issues one range request for [off, end) and writes what arrives
// at its offsets, committing (fsync, then the presence map) every
// CommitEvery bytes and before it returns. It returns how many bytes it
// wrote; those are present whatever the error, so the caller resumes after
// them.
func (m *Mirror) copyRange(ctx context.Context, fs *fileState, off, end int64) (written int64, err error) {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The watchdog cancels a request that delivers nothing for StallTimeout;
	// a stopped-and-fired watchdog is how a stall is told from other errors.
	watchdog := time.AfterFunc(m.opts.StallTimeout, cancel)
	defer watchdog.Stop()

	body, err := m.hub.openRange(rctx, fs.entry.Path, fs.entry.Size, off, end)
	if err != nil {
		if !watchdog.Stop() && ctx.Err() == nil {
			return 0, fmt.Errorf("%w: no answer for %s within %v", errStalled, fs.entry.Path, m.opts.StallTimeout)
		}
		return 0, err
	}
	defer body.Close()
	fs.mu.Lock()
	f := fs.f
	fs.mu.Unlock()
	committed := off // bytes before it are durable and present
	defer func() {
		// Whatever ended the request, keep what it wrote. A failed commit
		// (a full disk refusing the map) leaves the map behind the bytes:
		// those are fetched again, never trusted.
		if off+written > committed {
			if cerr := m.commit(fs, Range{committed, off + written}); cerr != nil && (err == nil || !errors.Is(err, ErrDiskFull)) {
				err = cerr
			}
		}
	}()
	buf := make([]byte, min(1<<20, end-off, m.opts.CommitEvery))
	clock := m.opts.Clock
	lastCommit := clock.Now()
	for off+written < end {
		// Fill the buffer read by read: any byte that arrives proves the
		// request alive and re-arms the watchdog; writes stay large, but
		// a slow link that is due a commit (CommitInterval) writes what
		// it has.
		want := int(min(int64(len(buf)), end-off-written))
		k := 0
		var rerr error
		for k < want && rerr == nil {
			var n int
			n, rerr = body.Read(buf[k:want])
			if n > 0 {
				k += n
				watchdog.Reset(m.opts.StallTimeout)
				if clock.Now().Sub(lastCommit) >= m.opts.CommitInterval {
					break
				}
			}
		}
		if k > 0 {
			n, werr := f.WriteAt(buf[:k], off+written)
			written += int64(n)
			m.prog.add(fs.entry.Path, int64(n))
			if werr != nil {
				return written, diskError(werr, fs.path)
			}
		}
		if due := off + written - committed; due >= m.opts.CommitEvery || (due > 0 && clock.Now().Sub(lastCommit) >= m.opts.CommitInterval) {
			if err := m.commit(fs, Range{committed, off + written}); err != nil {
				return written, err
			}
			committed, lastCommit = off+written, clock.Now()
		}
		if rerr != nil && (rerr != io.EOF || off+written < end) {
			if !watchdog.Stop() && ctx.Err() == nil {
				return written, fmt.Errorf("%w: %s: no byte for %v", errStalled, fs.entry.Path, m.opts.StallTimeout)
			}
			if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
				return written, fmt.Errorf("downloader: %s: connection closed %d bytes before the end of the range: %w", fs.entry.Path, end-off-written, io.ErrUnexpectedEOF)
			}
			return written, fmt.Errorf("downloader: %s: %w", fs.entry.Path, rerr)
		}
	}
	return written, nil
}
