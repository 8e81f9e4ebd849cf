package downloader

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/deltafin/deltafin/downloader/xet"
)

// Verifying a file held in part. No digest of the hub's listing covers a
// part of a file, but its Xet hash does, range by range: for each piece of
// the present bytes not yet checked, the CAS names the window of whole
// chunks around it and summarises the rest of the file in two Merkle
// subtrees; the window's bytes (those present from the disk, the few
// missing at its edges from the hub into memory, through the same fetch
// path) are chunked and hashed here, and the three subtrees must merge to
// the file's Xet hash. Fetch checks every present piece of the files it
// leaves partial (verifyPartial); the engine's reads check each range
// they fetch before using it, fetching the window's edges into the file
// with it (ensureChecked). A piece that passes is marked verified in the
// presence map; one that fails is marked missing and fetched again, once,
// then refused with ErrDamaged. A file the hub keeps without Xet (or whose
// CAS has no file-chunk-hashes endpoint, or answers in a shape this client
// cannot use) stays present, not verified, until it is complete and its
// sha256 checks it.

// errXetMismatch: a window's bytes do not give the file's Xet hash.
var errXetMismatch = errors.New("downloader: bytes do not match the file's Xet hash")

// verifyPartial checks the present, unchecked bytes of a file held in part.
func (m *Mirror) verifyPartial(ctx context.Context, fs *fileState) error {
	fs.mu.Lock()
	var todo []Range
	for _, r := range fs.pres.Ranges {
		todo = append(todo, fs.pres.XetVerified.missing(r)...)
	}
	fs.mu.Unlock()
	if len(todo) == 0 {
		return nil
	}
	x, ok, err := m.xetOf(ctx, fs)
	if !ok {
		return err
	}
	m.prog.set(fs.entry.Path, -1, FileVerifying)
	for _, piece := range pieces(todo, m.opts.ChunkSize) {
		err := m.verifyRange(ctx, fs, x, piece, false)
		if errors.Is(err, errNoChunkHashes) || errors.Is(err, ErrXet) {
			// Nothing to check against, or an answer this client cannot
			// use: present, not verified (a mismatch is never this).
			return nil
		}
		if errors.Is(err, errTooWide) || errors.Is(err, errDisagree) {
			continue // its window reaches far into missing bytes, or the check disagrees: later
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// xetOf returns the file's Xet hash and whether there is one to check
// against (an unusable answer is none), resetting the file's marks if
// they were made against another.
func (m *Mirror) xetOf(ctx context.Context, fs *fileState) (xetFile, bool, error) {
	x, err := m.xetFileOf(ctx, fs)
	if errors.Is(err, ErrXet) || (err == nil && x.hash == "") {
		return x, false, nil // nothing usable to check against: present, not verified
	}
	if err != nil {
		return x, false, err
	}
	fs.mu.Lock()
	if fs.pres.XetHash != x.hash {
		fs.pres.XetHash, fs.pres.XetVerified = x.hash, nil
	}
	fs.mu.Unlock()
	return x, true, nil
}

// maxFill is how many bytes outside a range a check fetches to complete
// the range's window (its chunks at the edges): into the file for an
// on-demand read, into memory for a bulk check. A window that reaches
// further into missing bytes (a long run without a content-defined cut)
// leaves the range unverified until more of the file is present.
const maxFill = 8 << 20

// errTooWide: the window around a range reaches maxFill into missing bytes.
var errTooWide = errors.New("downloader: the Xet window is too wide to fetch on demand")

// verifyRange checks piece of the file against its Xet hash and marks it
// verified: the CAS names its window; with fill (an on-demand read) the
// window's missing bytes are first fetched into the file, else they are
// read from the hub into memory. A mismatch drops the window's bytes held,
// fetches them again and checks once more, then is ErrDamaged.
func (m *Mirror) verifyRange(ctx context.Context, fs *fileState, x xetFile, piece Range, fill bool) error {
	path := fs.entry.Path
	ch, w, err := m.casWindow(ctx, fs, x, piece)
	if err != nil {
		return err
	}
	// The window's bytes this check must fetch besides the piece's own.
	fs.mu.Lock()
	extra := w.Len() - piece.Len() - fs.pres.Ranges.overlap(w) + fs.pres.Ranges.overlap(piece)
	fs.mu.Unlock()
	if extra > maxFill {
		return fmt.Errorf("%w: %s: window %v for %v", errTooWide, path, w, piece)
	}
	if fill {
		if err := m.Ensure(ctx, path, w.Start, w.Len()); err != nil {
			return err
		}
	}
	err = m.matchWindow(ctx, fs, x, ch, w)
	if errors.Is(err, errXetMismatch) {
		// Never accept a mismatch: the bad bytes may be anywhere in the
		// window, so drop what of it is present and fetch that again.
		fs.mu.Lock()
		held := fs.pres.Ranges.intersect(w)
		fs.mu.Unlock()
		first, derr := m.digestWindow(ctx, fs, w)
		if derr != nil {
			return derr
		}
		if err := m.dropAll(fs, held); err != nil {
			return err
		}
		for _, r := range held {
			if err := m.Ensure(ctx, path, r.Start, r.Len()); err != nil {
				return err
			}
		}
		if err = m.matchWindow(ctx, fs, x, ch, w); errors.Is(err, errXetMismatch) {
			again, derr := m.digestWindow(ctx, fs, w)
			if derr != nil {
				return derr
			}
			if again == first {
				// The hub sent the same bytes twice, and they still do not
				// merge to its hash: the bytes or the check may be wrong,
				// and stopping the install could not tell which. They stay
				// present, not verified (ErrUnverified guards their use).
				m.disagree(fs, Disagreement{File: path, Window: w, SHA256: first, XetHash: x.hash})
				return errDisagree
			}
			m.prog.set(path, -1, FileFailed)
			if derr := m.dropAll(fs, held); derr != nil {
				return derr
			}
			return fmt.Errorf("%w: %s: bytes %v, fetched twice from the hub, do not match the file's Xet hash %s; run `deltafin setup --repair` to re-verify the install (if it persists, the hub's copy of the file is broken)", ErrDamaged, path, w, x.hash)
		}
	}
	if err != nil {
		return err
	}
	done := piece
	if fill {
		done = w // every byte of it was read from the file
	}
	fs.mu.Lock()
	if fs.pres.Ranges.covers(done) {
		fs.pres.XetVerified = fs.pres.XetVerified.add(done)
	}
	fs.mu.Unlock()
	return fs.persist()
}

func (m *Mirror) dropAll(fs *fileState, rs []Range) error {
	for _, r := range rs {
		if err := m.drop(fs, r); err != nil {
			return err
		}
	}
	return nil
}

// ensureChecked is Ensure for the engine's reads of a file held in part:
// a range that is missing is fetched with the edges of its Xet window and
// checked before the engine sees it. Where it cannot be checked (no Xet,
// no usable answer, a window too wide, the CAS unreachable) the bytes are
// made present as Ensure does and left unverified, for the next setup.
func (m *Mirror) ensureChecked(ctx context.Context, file string, r Range) error {
	fs, err := m.file(file)
	if err != nil {
		return err
	}
	if m.opts.ReadOnly || r.Start < 0 || r.Len() <= 0 || r.End > fs.entry.Size {
		return m.Ensure(ctx, file, r.Start, r.Len())
	}
	fs.mu.Lock()
	// With AllowUnverified only a read that fetches is checked here: bytes
	// already present and unverified are the next setup's to check, so
	// that a read of them never waits for the hub.
	// Where unverified bytes may not be used, present ones not verified
	// yet are checked now (a concurrent read may be checking them).
	done := (fs.pres.Verified != "" && fs.pres.Verified == digestOf(fs.entry)) || fs.pres.XetVerified.covers(r) ||
		(fs.pres.Ranges.covers(r) && m.opts.AllowUnverified) || fs.xetSkip.overlap(r) > 0
	fs.mu.Unlock()
	if done {
		if err := m.Ensure(ctx, file, r.Start, r.Len()); err != nil {
			return err
		}
		return m.usable(fs, r)
	}
	x, ok, err := m.xetOf(ctx, fs)
	if ok {
		err = m.verifyRange(ctx, fs, x, r, true)
	}
	if errors.Is(err, ErrDamaged) {
		return err
	}
	skip := Range{0, fs.entry.Size} // no Xet, or an answer this client cannot use
	if errors.Is(err, errTooWide) || errors.Is(err, errDisagree) {
		skip = r
	}
	if (!ok && err == nil) || errors.Is(err, errTooWide) || errors.Is(err, errNoChunkHashes) || errors.Is(err, ErrXet) || errors.Is(err, errDisagree) {
		fs.mu.Lock()
		fs.xetSkip = fs.xetSkip.add(skip)
		fs.mu.Unlock()
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// Checked, or it could not be: then present, not verified.
	if err := m.Ensure(ctx, file, r.Start, r.Len()); err != nil {
		return err
	}
	return m.usable(fs, r)
}

// usable is nil when the engine may use bytes r of the file, present now:
// they are verified, or Options.AllowUnverified says unverified bytes may
// be used.
func (m *Mirror) usable(fs *fileState, r Range) error {
	if m.opts.AllowUnverified {
		return nil
	}
	fs.mu.Lock()
	ok := (fs.pres.Verified != "" && fs.pres.Verified == digestOf(fs.entry)) || fs.pres.XetVerified.covers(r)
	fs.mu.Unlock()
	if ok {
		return nil
	}
	return fmt.Errorf("%w: %s bytes %v could not be checked against the hub (no usable Xet hash for them); run `deltafin fetch-experts` to complete the file and verify it by its sha256, or pass --allow-unverified to use them as they are", ErrUnverified, fs.entry.Path, r)
}

// errDisagree: a verifier disagreement (Options.Disagreement).
var errDisagree = errors.New("downloader: the Xet check disagrees with bytes the hub sent twice")

// Disagreement is the evidence of a verifier disagreement: the window, the
// sha256 of its bytes (the same both times) and the file's Xet hash they
// did not merge to.
type Disagreement struct {
	File    string
	Window  Range
	SHA256  string
	XetHash string
}

func (d Disagreement) String() string {
	return fmt.Sprintf("the Xet check of %s disagrees with the hub: window %v came back byte-identical when fetched again (sha256 %s) and still does not merge to the file's Xet hash %s; the bytes stay present, not verified", d.File, d.Window, d.SHA256, d.XetHash)
}

func (m *Mirror) disagree(fs *fileState, d Disagreement) {
	if m.opts.Disagreement != nil {
		m.opts.Disagreement(d)
	}
}

// digestWindow is the sha256 of the window's bytes as the check reads
// them (present from the file, missing from the hub).
func (m *Mirror) digestWindow(ctx context.Context, fs *fileState, w Range) (string, error) {
	h := sha256.New()
	for off := w.Start; off < w.End; {
		n := min(int64(windowBlock), w.End-off)
		block := make([]byte, n)
		if err := m.readOnlyAt(ctx, fs, block, off); err != nil {
			return "", err
		}
		h.Write(block)
		off += n
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// pieces splits ranges at multiples of size, as chunks splits work.
func pieces(ranges []Range, size int64) []Range {
	var out []Range
	for _, r := range ranges {
		for s := r.Start; s < r.End; {
			e := min((s/size+1)*size, r.End)
			out = append(out, Range{s, e})
			s = e
		}
	}
	return out
}

// xetFileOf asks the hub for the file's Xet hash, retrying as a transfer.
func (m *Mirror) xetFileOf(ctx context.Context, fs *fileState) (xetFile, error) {
	rt := retrier{m: m, what: fs.entry.Path + " Xet hash"}
	for {
		x, err := m.hub.xetFileOf(ctx, fs.entry.Path)
		if err == nil || ctx.Err() != nil || isPermanent(err) {
			return x, err
		}
		if err := rt.wait(ctx, err); err != nil {
			return x, err
		}
	}
}

// casWindow asks the CAS about piece: its answer and the window of whole
// chunks around the piece.
func (m *Mirror) casWindow(ctx context.Context, fs *fileState, x xetFile, piece Range) (*chunkHashes, Range, error) {
	path, size := fs.entry.Path, fs.entry.Size
	rt := retrier{m: m, what: path + " Xet chunk hashes of " + piece.String()}
	var ch *chunkHashes
	for {
		var err error
		if ch, err = m.hub.fileChunkHashes(ctx, path, x, piece); err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil, Range{}, ctx.Err()
		}
		if isPermanent(err) {
			return nil, Range{}, err
		}
		if err := rt.wait(ctx, err); err != nil {
			return nil, Range{}, err
		}
	}
	if ch.FileSize != size || len(ch.Windows) != 1 || len(ch.HashRanges) != 2 {
		return nil, Range{}, permanent(fmt.Errorf("%w: %s: chunk hashes for %v describe a %d-byte file in %d windows and %d summaries (want %d bytes, 1 window, 2 summaries)",
			ErrXet, path, piece, ch.FileSize, len(ch.Windows), len(ch.HashRanges), size))
	}
	w := Range{ch.Windows[0].DirtyByteRange[0], ch.Windows[0].DirtyByteRange[1]}
	if w.Start < 0 || w.End > size || w.Start > piece.Start || w.End < piece.End {
		return nil, Range{}, permanent(fmt.Errorf("%w: %s: the window %v does not hold the range %v", ErrXet, path, w, piece))
	}
	return ch, w, nil
}

// matchWindow chunks and hashes the window's bytes and merges them with
// the CAS's summaries of the rest: errXetMismatch when that is not the
// file's Xet hash by either chunker.
func (m *Mirror) matchWindow(ctx context.Context, fs *fileState, x xetFile, ch *chunkHashes, w Range) error {
	for _, c := range []xet.Chunker{xet.Current, xet.Legacy} {
		chunks, err := m.chunkWindow(ctx, fs, w, c)
		if err != nil {
			return err
		}
		got, err := mergeWindow(ch.HashRanges[0], xet.NewSubtree(w.Start == 0, chunks, w.End == fs.entry.Size), ch.HashRanges[1])
		if err != nil {
			return permanent(fmt.Errorf("%w: %s: %v", ErrXet, fs.entry.Path, err))
		}
		if got.String() == x.hash {
			return nil
		}
	}
	return fmt.Errorf("%w: %s: window %v", errXetMismatch, fs.entry.Path, w)
}

// mergeWindow merges the subtree before the window (nil when the window
// starts the file), the window's and the one after, into the file hash,
// leaving before and after as they were.
func mergeWindow(before, window, after *xet.Subtree) (xet.Hash, error) {
	all := window
	if before != nil {
		b := *before // Merge changes its receiver; the CAS's answer is kept for another try
		if err := b.Merge(window); err != nil {
			return xet.Hash{}, err
		}
		all = &b
	}
	if after != nil {
		if err := all.Merge(after); err != nil {
			return xet.Hash{}, err
		}
	}
	return all.FileHash()
}

// windowBlock is how much of a window is read at a time.
const windowBlock = 8 << 20

// chunkWindow reads the window block by block (present bytes from the
// file, missing ones from the hub into memory) and cuts it into chunks as
// the chunker c does from the window's start, a chunk boundary of the file.
func (m *Mirror) chunkWindow(ctx context.Context, fs *fileState, w Range, c xet.Chunker) ([]xet.Chunk, error) {
	var chunks []xet.Chunk
	var buf []byte
	for off := w.Start; off < w.End || len(buf) > 0; {
		if off < w.End {
			n := min(int64(windowBlock), w.End-off)
			block := make([]byte, n)
			if err := m.readOnlyAt(ctx, fs, block, off); err != nil {
				return nil, err
			}
			buf = append(buf, block...)
			off += n
		}
		// A chunk is cut only where no later byte could change it: with
		// MaxChunk bytes ahead, or at the window's end.
		for len(buf) > 0 && (len(buf) >= xet.MaxChunk || off == w.End) {
			n := c.Next(buf)
			chunks = append(chunks, xet.Chunk{Hash: xet.ChunkHash(buf[:n]), Len: int64(n)})
			buf = buf[n:]
		}
		buf = append([]byte(nil), buf...)
	}
	return chunks, nil
}
