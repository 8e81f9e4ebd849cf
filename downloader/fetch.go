package downloader

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"runtime"
	"sync"

	"golang.org/x/sync/errgroup"
)

// gate pauses bulk transfers: while closed, workers wait before their next
// chunk, and Pause cancels the chunks in flight (each starts again after
// Resume; completed chunks stay).
type gate struct {
	mu      sync.Mutex
	paused  bool
	resume  chan struct{}
	cancels map[int]context.CancelFunc
	next    int
	// waiting counts the workers waiting for Resume; changed is closed and
	// replaced when it changes, so a test can wait for a pause to settle.
	waiting int
	changed chan struct{}
}

func (g *gate) init() { g.cancels = map[int]context.CancelFunc{} }

// enter waits while paused and returns a context that Pause cancels.
func (g *gate) enter(ctx context.Context) (context.Context, func(), error) {
	for {
		g.mu.Lock()
		if !g.paused {
			c, cancel := context.WithCancel(ctx)
			id := g.next
			g.next++
			g.cancels[id] = cancel
			g.mu.Unlock()
			return c, func() {
				g.mu.Lock()
				delete(g.cancels, id)
				g.mu.Unlock()
				cancel()
			}, nil
		}
		ch := g.resume
		g.wait(+1)
		g.mu.Unlock()
		var err error
		select {
		case <-ch:
		case <-ctx.Done():
			err = ctx.Err()
		}
		g.mu.Lock()
		g.wait(-1)
		g.mu.Unlock()
		if err != nil {
			return nil, nil, err
		}
	}
}

// wait changes the count of waiting workers. Called with mu held.
func (g *gate) wait(d int) {
	g.waiting += d
	if g.changed != nil {
		close(g.changed)
	}
	g.changed = make(chan struct{})
}

// Pause stops bulk transfers (Fetch) until Resume: requests in flight are
// cancelled and no new one starts. Completed chunks are kept. On-demand
// fetches (Ensure) are not paused.
func (m *Mirror) Pause() {
	m.gate.mu.Lock()
	if !m.gate.paused {
		m.gate.paused = true
		m.gate.resume = make(chan struct{})
	}
	for _, c := range m.gate.cancels {
		c()
	}
	m.gate.mu.Unlock()
	m.prog.phase(PhasePaused, "paused")
}

// pauseFor pauses because of err (a full disk) and says so in an event.
func (m *Mirror) pauseFor(err error) {
	m.gate.mu.Lock()
	if !m.gate.paused {
		m.gate.paused = true
		m.gate.resume = make(chan struct{})
	}
	m.gate.mu.Unlock()
	m.prog.phaseErr(PhasePaused, "disk full", err)
}

// Resume continues bulk transfers after Pause.
func (m *Mirror) Resume() {
	m.gate.mu.Lock()
	was := m.gate.paused
	if was {
		m.gate.paused = false
		close(m.gate.resume)
	}
	m.gate.mu.Unlock()
	if was {
		m.prog.phase(PhaseDownload, "resumed")
	}
}

// Paused reports whether bulk transfers are paused.
func (m *Mirror) Paused() bool {
	m.gate.mu.Lock()
	defer m.gate.mu.Unlock()
	return m.gate.paused
}

// Fetch makes every range of work present, Jobs chunks at a time, then
// verifies every complete file of the plan against the hub's digest. A
// mismatch drops the file's bytes and fetches them again; a second mismatch
// is ErrChecksum. A full disk stops the transfer with ErrDiskFull, keeping
// everything written (or pauses it, see Options.WaitOnDiskFull); calling
// Fetch again continues. Concurrent calls run one after the other.
func (m *Mirror) Fetch(ctx context.Context, p *Plan, work []Work) error {
	if m.opts.ReadOnly {
		return fmt.Errorf("%w: Fetch", ErrReadOnly)
	}
	m.fetchMu.Lock()
	defer m.fetchMu.Unlock()
	total, present := map[string]int64{}, map[string]int64{}
	for _, w := range work {
		n, err := m.Present(w.File, w.Start, w.Len())
		if err != nil {
			return err
		}
		total[w.File] += w.Len()
		present[w.File] += n
	}
	m.prog.begin(total, present)
	files := map[string]File{}
	for _, f := range p.Files {
		files[f.Path] = f
	}
	for {
		err := m.round(ctx, files, m.chunks(work))
		if err == nil {
			break
		}
		if !errors.Is(err, ErrDiskFull) {
			return err
		}
		if !m.opts.WaitOnDiskFull {
			m.prog.phaseErr(PhasePaused, "disk full", err)
			return err
		}
		// Pause until the app resumes (after the user freed space), then
		// go on with the chunks still missing.
		m.pauseFor(err)
		_, done, werr := m.gate.enter(ctx)
		if werr != nil {
			return werr
		}
		done()
	}
	if err := m.verifyAll(ctx, p); err != nil {
		return err
	}
	m.prog.phase(PhaseDone, "")
	return nil
}

// round transfers chunks and hashes each file as soon as its last chunk
// lands, while the others download (verifyAll then meets verified files).
func (m *Mirror) round(ctx context.Context, files map[string]File, chunks []Work) error {
	vctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var vg errgroup.Group
	vg.SetLimit(max(1, runtime.NumCPU()/2))
	var mu sync.Mutex
	left := map[string]int{}
	for _, c := range chunks {
		left[c.File]++
	}
	err := m.transfer(ctx, chunks, func(c Work) {
		mu.Lock()
		left[c.File]--
		last := left[c.File] == 0
		mu.Unlock()
		if f, ok := files[c.File]; ok && last {
			vg.Go(func() error { return m.verifyFile(vctx, f) })
		}
	})
	if err != nil {
		cancel()
		vg.Wait()
		return err
	}
	return vg.Wait()
}

// chunks splits work at ChunkSize boundaries of the file (so that a chunk is
// the same bytes in every run) and drops what is already present.
func (m *Mirror) chunks(work []Work) []Work {
	cs := m.opts.ChunkSize
	var out []Work
	for _, w := range work {
		for s := w.Start; s < w.End; {
			e := min((s/cs+1)*cs, w.End)
			if n, err := m.Present(w.File, s, e-s); err != nil || n < e-s {
				out = append(out, Work{w.File, Range{s, e}})
			}
			s = e
		}
	}
	return out
}

// transfer runs the chunks on Jobs workers; the first permanent error
// stops the others. done, if not nil, is called after each chunk lands.
func (m *Mirror) transfer(ctx context.Context, chunks []Work, done func(Work)) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(m.opts.Jobs)
	for _, c := range chunks {
		g.Go(func() error {
			if err := m.fetchChunk(gctx, c); err != nil {
				return err
			}
			if done != nil {
				done(c)
			}
			return nil
		})
	}
	return g.Wait()
}

func (m *Mirror) fetchChunk(ctx context.Context, c Work) error {
	for {
		rctx, done, err := m.gate.enter(ctx)
		if err != nil {
			return err
		}
		err = m.Ensure(rctx, c.File, c.Start, c.Len())
		paused := rctx.Err() != nil && ctx.Err() == nil
		done()
		if err != nil && paused {
			continue // Pause cancelled it: wait for Resume, then go on
		}
		return err
	}
}

// verifyAll checks every complete, not yet verified file of the plan, a few
// at a time (hashing is bound by the CPU and the disk, not the network).
func (m *Mirror) verifyAll(ctx context.Context, p *Plan) error {
	m.prog.phase(PhaseVerify, "")
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(1, min(m.opts.Jobs, runtime.NumCPU())))
	for _, f := range p.Files {
		g.Go(func() error { return m.verifyFile(gctx, f) })
	}
	return g.Wait()
}

func (m *Mirror) verifyFile(ctx context.Context, f File) error {
	fs, err := m.file(f.Path)
	if err != nil {
		return err
	}
	fs.mu.Lock()
	complete := fs.pres.Ranges.covers(Range{0, f.Size})
	verified := fs.pres.Verified != "" && fs.pres.Verified == digestOf(f.Entry)
	fs.mu.Unlock()
	switch {
	case verified:
		m.prog.set(f.Path, -1, FileVerified)
		return nil
	case !complete:
		// Held in part: check its bytes against the Xet hash, where the
		// hub has one.
		if err := m.verifyPartial(ctx, fs); err != nil {
			return err
		}
		m.prog.set(f.Path, -1, FilePartial)
		return nil
	}
	if err := m.verify(ctx, fs); err == nil || !errors.Is(err, ErrChecksum) {
		return err
	}
	// Never accept a mismatch: drop the bytes and fetch the file again.
	if err := m.forget(fs); err != nil {
		return err
	}
	m.prog.set(f.Path, 0, FileFetching)
	if err := m.transfer(ctx, m.chunks([]Work{{f.Path, Range{0, f.Size}}}), nil); err != nil {
		return err
	}
	if err := m.verify(ctx, fs); err != nil {
		m.prog.set(f.Path, -1, FileFailed)
		if errors.Is(err, ErrChecksum) {
			_ = m.forget(fs)
		}
		return fmt.Errorf("%w (after fetching it again; the hub or the network corrupts it)", err)
	}
	return nil
}

// digestOf names the digest a file is checked against: the LFS sha256, or
// for files kept in git the blob id (the hub has no sha256 for those).
func digestOf(e Entry) string {
	if e.SHA256 != "" {
		return "sha256:" + e.SHA256
	}
	if e.GitOID != "" {
		return "gitsha1:" + e.GitOID
	}
	return ""
}

// verify hashes the complete file and records the digest in its presence map.
func (m *Mirror) verify(ctx context.Context, fs *fileState) error {
	e := fs.entry
	want := digestOf(e)
	if want == "" {
		return fmt.Errorf("%w: %s: the hub listing gives no digest to check it against", ErrChecksum, e.Path)
	}
	m.prog.set(e.Path, -1, FileVerifying)
	var h hash.Hash
	var got string
	if e.SHA256 != "" {
		h = sha256.New()
	} else {
		h = sha1.New()
		fmt.Fprintf(h, "blob %d\x00", e.Size)
	}
	f, err := os.Open(fs.path)
	if err != nil {
		return diskError(err, fs.path)
	}
	defer f.Close()
	n, err := io.Copy(h, ctxReader{ctx, f})
	if err != nil {
		return fmt.Errorf("downloader: hash %s: %w", e.Path, err)
	}
	if n != e.Size {
		return fmt.Errorf("%w: %s is %d bytes, the hub says %d", ErrChecksum, e.Path, n, e.Size)
	}
	if e.SHA256 != "" {
		got = "sha256:" + hex.EncodeToString(h.Sum(nil))
	} else {
		got = "gitsha1:" + hex.EncodeToString(h.Sum(nil))
	}
	if got != want {
		return fmt.Errorf("%w: %s: got %s, the hub says %s", ErrChecksum, e.Path, got, want)
	}
	st, err := f.Stat()
	if err != nil {
		return diskError(err, fs.path)
	}
	fs.mu.Lock()
	fs.pres.Verified, fs.pres.VerifiedMtime = want, st.ModTime().UnixNano()
	fs.mu.Unlock()
	if err := fs.persist(); err != nil {
		return err
	}
	m.prog.set(e.Path, -1, FileVerified)
	return nil
}

// forget marks every byte of the file missing and returns once that is on
// disk, so that no crash during the refetch can trust the old bytes.
func (m *Mirror) forget(fs *fileState) error {
	fs.mu.Lock()
	fs.pres = presence{Version: presenceVersion, Size: fs.entry.Size}
	fs.mu.Unlock()
	return fs.persist()
}

// ctxReader stops a long hash when ctx is cancelled.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
