package downloader

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltafin/deltafin/downloader/hubtest"
	"github.com/stretchr/testify/require"
)

// requireSpineIdentical checks that the stream install's spine on disk is
// the hub's bytes.
func requireSpineIdentical(t *testing.T, h *hubtest.Hub, p *Plan, dir string) {
	t.Helper()
	for _, w := range p.SpineWork() {
		got, err := os.ReadFile(filepath.Join(dir, w.File))
		require.NoError(t, err)
		require.True(t, bytes.Equal(h.Files[w.File].Data[w.Start:w.End], got[w.Start:w.End]), "%s %v differs from the hub's", w.File, w.Range)
	}
}

// openPlan opens a mirror (closed when the test ends) and plans it.
func openPlan(t *testing.T, opts Options) (*Mirror, *Plan) {
	t.Helper()
	m, err := Open(opts)
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	p, err := m.Plan(t.Context())
	require.NoError(t, err)
	return m, p
}

// spineData matches the first request for spine data of healShard, past
// its header.
func spineData(t *testing.T, h *hubtest.Hub) func(f *fakeFile, start, end int64) bool {
	n := int64(binary.LittleEndian.Uint64(h.Files[healShard].Data))
	return func(f *fakeFile, start, end int64) bool { return f.Path == healShard && start >= 8+n }
}

// TestCorruptSpineOfAStreamInstallHeals: one byte of spine data of a shard
// that a stream install holds in part is flipped in transit. The shard's
// Xet hash finds it: the window is fetched again, and the install ends
// with the hub's bytes, every one of them verified.
func TestCorruptSpineOfAStreamInstallHeals(t *testing.T) {
	t.Parallel()
	h := newFakeHub(t)
	var hit atomic.Bool
	match := spineData(t, h)
	h.SetFault(once(func(f *fakeFile, start, end int64) bool {
		if match(f, start, end) {
			hit.Store(true)
			return true
		}
		return false
	}, corrupt))
	dir := t.TempDir()
	m, p := setup(t, t.Context(), options(h, dir), Stream)
	require.True(t, hit.Load(), "a spine byte was flipped in transit")
	requireSpineIdentical(t, h, p, dir)
	spine, err := m.Coverage(p.SpineWork())
	require.NoError(t, err)
	require.Equal(t, "100% present, 100% verified", spine.String())
	c, err := m.Coverage([]Work{{healShard, Range{0, int64(len(h.Files[healShard].Data))}}})
	require.NoError(t, err)
	require.Less(t, c.Present, c.Total, "the shard is held in part")
	require.Equal(t, c.Present, c.Verified, "and what is held is verified")
	require.Positive(t, h.CASRequests.Load())

	// The marks survive a new process; an upgrade to full keeps them true.
	require.NoError(t, m.Close())
	m, p = setup(t, t.Context(), options(h, dir), Full)
	all, err := m.Coverage(p.Work(Full))
	require.NoError(t, err)
	require.True(t, all.AllVerified())
	h.RequireIdentical(t, dir)
}

// TestCorruptSpineEveryTimeIsRefused: a hub that flips a different spine
// byte each time: the window fetched again still fails, with other bytes,
// so the stream install refuses, naming the file and the repair.
func TestCorruptSpineEveryTimeIsRefused(t *testing.T) {
	t.Parallel()
	h := newFakeHub(t)
	src := h.Files[healShard].Data
	n := int64(binary.LittleEndian.Uint64(src))
	at := 8 + n + 100 // a byte of the first tensor's data, in the spine
	var tries atomic.Int64
	h.SetFault(func(w http.ResponseWriter, r *http.Request, f *fakeFile, start, end int64) bool {
		if f.Path != healShard || start > at || end <= at {
			return false
		}
		hubtest.WriteRange(w, &fakeFile{Path: f.Path, Data: flipped(src, int(at+tries.Add(1)%2))}, start, end, int64(len(src)))
		return true
	})
	m, p := openPlan(t, options(h, t.TempDir()))
	inSpine := false
	for _, w := range p.SpineWork() {
		inSpine = inSpine || (w.File == healShard && w.Start <= at && at < w.End)
	}
	require.True(t, inSpine, "the flipped byte is spine")
	err := m.Fetch(t.Context(), p, p.Work(Stream))
	require.ErrorIs(t, err, ErrDamaged)
	require.ErrorContains(t, err, healShard)
	require.ErrorContains(t, err, "deltafin setup --repair")
	c, err := m.Coverage([]Work{{healShard, Range{at, at + 1}}})
	require.NoError(t, err)
	require.Zero(t, c.Present, "the bad byte is not kept")
}

// TestVerifierDisagreementGoesOn: the hub sends the same bytes every time
// and they never merge to its Xet hash, as when this client's check
// differed from xet-core's in some detail. That is a verifier
// disagreement, not damage: the install goes on, the evidence (window,
// sha256 of its bytes, the Xet hash) is reported, the bytes stay present
// and not verified, and the engine's read of them is refused unless
// unverified bytes are allowed.
func TestVerifierDisagreementGoesOn(t *testing.T) {
	t.Parallel()
	h := newFakeHub(t)
	src := h.Files[healShard].Data
	n := int64(binary.LittleEndian.Uint64(src))
	at := 8 + n + 100
	bad := flipped(src, int(at))
	h.SetFault(func(w http.ResponseWriter, r *http.Request, f *fakeFile, start, end int64) bool {
		if f.Path != healShard || start > at || end <= at {
			return false
		}
		hubtest.WriteRange(w, &fakeFile{Path: f.Path, Data: bad}, start, end, int64(len(src)))
		return true
	})
	dir := t.TempDir()
	opts := options(h, dir)
	var got []Disagreement
	opts.Disagreement = func(d Disagreement) { got = append(got, d) }
	m, p := openPlan(t, opts)
	require.NoError(t, m.Fetch(t.Context(), p, p.Work(Stream)), "a disagreement does not stop the install")
	require.NotEmpty(t, got)
	for _, d := range got {
		require.Equal(t, healShard, d.File)
		require.True(t, d.Window.Start <= at && at < d.Window.End, "the window %v holds the byte", d.Window)
		sum := sha256.Sum256(bad[d.Window.Start:d.Window.End])
		require.Equal(t, hex.EncodeToString(sum[:]), d.SHA256, "the evidence is the sha256 of the bytes sent twice")
		require.Equal(t, h.XetHash(healShard), d.XetHash)
		require.Contains(t, d.String(), "present, not verified")
	}
	c, err := m.Coverage([]Work{{healShard, Range{at, at + 1}}})
	require.NoError(t, err)
	require.Equal(t, int64(1), c.Present, "the byte is kept")
	require.Zero(t, c.Verified, "and not verified")
	u, err := m.Unverified()
	require.NoError(t, err)
	require.Equal(t, "unverified", u.State())
	require.ErrorIs(t, u.Err(), ErrUnverified)
	require.ErrorContains(t, u.Err(), "fetch-experts")
	require.ErrorContains(t, u.Err(), "--allow-unverified")
	src2, err := m.Source(healShard)
	require.NoError(t, err)
	require.ErrorIs(t, src2.Ensure(t.Context(), at, 1), ErrUnverified)
	require.NoError(t, m.Close())

	opts.AllowUnverified = true
	m, err = Open(opts)
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	src2, err = m.Source(healShard)
	require.NoError(t, err)
	require.NoError(t, src2.Ensure(t.Context(), at, 1), "allowed, the bytes are used as they are")
}

// TestStreamInstallWithoutXetIsPresentNotVerified: a hub that keeps the
// shards without Xet: the spine of a partly held shard is present but not
// verified, and the first upgrade to full verifies it by the sha256.
// The same holds for a CAS without the file-chunk-hashes endpoint.
func TestStreamInstallWithoutXetIsPresentNotVerified(t *testing.T) {
	t.Parallel()
	for _, noChunkHashes := range []bool{false, true} {
		t.Run(map[bool]string{false: "no Xet", true: "no chunk hashes"}[noChunkHashes], func(t *testing.T) {
			t.Parallel()
			h := newFakeHub(t)
			h.NoXet, h.NoChunkHashes = !noChunkHashes, noChunkHashes
			dir := t.TempDir()
			m, p := setup(t, t.Context(), options(h, dir), Stream)
			spine, err := m.Coverage(p.SpineWork())
			require.NoError(t, err)
			require.Equal(t, "100% present, 0% verified", spine.String())
			require.Zero(t, h.CASRequests.Load())
			require.NoError(t, m.Close())
			m, p = setup(t, t.Context(), options(h, dir), Full)
			all, err := m.Coverage(p.Work(Full))
			require.NoError(t, err)
			require.True(t, all.AllVerified(), "the upgrade to full verifies every byte")
			h.RequireIdentical(t, dir)
		})
	}
}

// TestUnusableCASAnswerLeavesItUnverified: chunk hashes this client
// cannot use (no window around the range, a broken subtree) neither fail
// the install nor count as verified.
func TestUnusableCASAnswerLeavesItUnverified(t *testing.T) {
	t.Parallel()
	for name, body := range map[string]string{
		"no window":     `{"totalChunks":1,"fileSize":1,"windows":[],"hashRanges":[null],"gapVerification":[]}`,
		"broken levels": `{"totalChunks":1,"fileSize":1,"windows":[{"dirtyByteRange":[0,1]}],"hashRanges":[{"nodes":[],"levels":[[3,0]],"at_start":true,"at_end":false},null],"gapVerification":[]}`,
		"not JSON":      `<html>`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := newFakeHub(t)
			h.SetCASFault(func(w http.ResponseWriter) bool {
				w.Write([]byte(body))
				return true
			})
			m, p := setup(t, t.Context(), options(h, t.TempDir()), Stream)
			spine, err := m.Coverage(p.SpineWork())
			require.NoError(t, err)
			require.Equal(t, "100% present, 0% verified", spine.String())
			require.Positive(t, h.CASRequests.Load())
		})
	}
}

// TestXetTokenIsExchangedAgain: a CAS token refused before its expiry (used
// up) is exchanged again and the request repeated; a token whose expiry
// has come (on the mirror's clock) is exchanged before it is used.
func TestXetTokenIsExchangedAgain(t *testing.T) {
	t.Parallel()
	t.Run("refused", func(t *testing.T) {
		t.Parallel()
		h := newFakeHub(t)
		h.TokenUses = 2
		m, p := setup(t, t.Context(), options(h, t.TempDir()), Stream)
		spine, err := m.Coverage(p.SpineWork())
		require.NoError(t, err)
		require.True(t, spine.AllVerified())
		require.Greater(t, h.CASRequests.Load(), int64(4))
		require.GreaterOrEqual(t, h.TokenExchanges.Load(), (h.CASRequests.Load()+1)/2, "a new token after every second request")
	})
	t.Run("expired", func(t *testing.T) {
		t.Parallel()
		h := newFakeHub(t)
		h.TokenTTL = 10 * time.Minute
		clock := newFakeClock()
		clock.now = time.Now()
		opts := options(h, t.TempDir())
		opts.Clock = clock
		m, p := openPlan(t, opts)
		var shard File
		for _, f := range p.Files {
			if f.Path == healShard {
				shard = f
			}
		}
		require.NoError(t, m.Fetch(t.Context(), p, []Work{{healShard, shard.Spine[0]}}))
		require.Equal(t, int64(1), h.TokenExchanges.Load(), "one token for the first range")
		clock.mu.Lock()
		clock.now = clock.now.Add(9*time.Minute + 30*time.Second) // within a minute of the expiry
		clock.mu.Unlock()
		h.SetTokenTTL(time.Hour) // the next token lasts
		require.NoError(t, m.Fetch(t.Context(), p, p.Work(Stream)))
		require.Equal(t, int64(2), h.TokenExchanges.Load(), "a token about to expire is exchanged before use")
		spine, err := m.Coverage(p.SpineWork())
		require.NoError(t, err)
		require.True(t, spine.AllVerified())
	})
}

// TestFlipOnDiskAfterVerificationIsFoundByRepair: a verified spine byte
// of a partly held shard changed on disk is found by --repair, which
// checks the Xet hash again and fetches the window again.
func TestFlipOnDiskAfterVerificationIsFoundByRepair(t *testing.T) {
	t.Parallel()
	h := newFakeHub(t)
	dir := t.TempDir()
	m, _ := setup(t, t.Context(), options(h, dir), Stream)
	require.NoError(t, m.Close())
	n := int64(binary.LittleEndian.Uint64(h.Files[healShard].Data))
	f, err := os.OpenFile(filepath.Join(dir, healShard), os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte{h.Files[healShard].Data[8+n+100] ^ 0x20}, 8+n+100)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	opts := options(h, dir)
	opts.Repair = true
	m, p := setup(t, t.Context(), opts, Stream)
	requireSpineIdentical(t, h, p, dir)
	spine, err := m.Coverage(p.SpineWork())
	require.NoError(t, err)
	require.True(t, spine.AllVerified())
}

// TestXetFilesChunkedByTheLegacyRuleVerify: files uploaded before the
// current chunker (three of the fixture's four shards cut differently by
// it) verify too.
func TestXetFilesChunkedByTheLegacyRuleVerify(t *testing.T) {
	t.Parallel()
	h := newFakeHub(t)
	h.ChunkLegacy()
	dir := t.TempDir()
	m, p := setup(t, t.Context(), options(h, dir), Stream)
	spine, err := m.Coverage(p.SpineWork())
	require.NoError(t, err)
	require.True(t, spine.AllVerified(), "spine %s", spine)
	requireSpineIdentical(t, h, p, dir)
}

// TestOnDemandExpertIsVerifiedBeforeUse: an expert the engine reads from a
// stream install (Source.ReadAt) arrives with one byte flipped in transit:
// the read checks it against the shard's Xet hash, fetches it again and
// returns the hub's bytes, verified; a clean read is verified too.
func TestOnDemandExpertIsVerifiedBeforeUse(t *testing.T) {
	t.Parallel()
	h := newFakeHub(t)
	m, p := setup(t, t.Context(), options(h, t.TempDir()), Stream)
	var experts []Expert
	for _, e := range p.Experts() {
		if e.File == healShard {
			experts = append(experts, e)
		}
	}
	require.Greater(t, len(experts), 40)
	src, err := m.Source(healShard)
	require.NoError(t, err)
	var hit atomic.Bool
	bad := experts[0]
	h.SetFault(once(func(f *fakeFile, start, end int64) bool {
		ok := f.Path == healShard && start <= bad.Start && bad.End <= end
		hit.Store(hit.Load() || ok)
		return ok
	}, corrupt))
	for _, e := range []Expert{bad, experts[len(experts)-1]} {
		got := make([]byte, e.Len())
		require.NoError(t, src.ReadAt(t.Context(), got, e.Start))
		require.True(t, bytes.Equal(h.Files[healShard].Data[e.Start:e.End], got), "expert %v is the hub's", e.ExpertID)
		c, err := m.Coverage([]Work{{e.File, e.Range}})
		require.NoError(t, err)
		require.True(t, c.AllVerified(), "expert %v: %s", e.ExpertID, c)
	}
	require.True(t, hit.Load(), "the first expert's bytes were flipped in transit")
}
