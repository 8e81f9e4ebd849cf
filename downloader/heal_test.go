package downloader

import (
	"bytes"
	"encoding/binary"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/checkpoint/safetensors"
	"github.com/deltafin/deltafin/downloader/hubtest"
	"github.com/stretchr/testify/require"
)

const healShard = "model-00002-of-000004.safetensors"

// headerFlips are offsets in healShard's header whose flipped byte makes
// the header unusable, each a different way: the length prefix, JSON
// syntax, an expert tensor's name, an expert tensor's data offset.
func headerFlips(t *testing.T, data []byte) map[string]int {
	t.Helper()
	n := int(binary.LittleEndian.Uint64(data))
	hdr := data[8 : 8+n]
	name := bytes.Index(hdr, []byte(".experts."))
	require.Positive(t, name)
	offs := bytes.Index(hdr[name:], []byte(`"data_offsets":[`))
	require.Positive(t, offs)
	return map[string]int{
		"length prefix":        2,
		"opening brace":        8,
		"expert tensor name":   8 + name + 3,
		"expert tensor offset": 8 + name + offs + len(`"data_offsets":[`),
	}
}

func flipped(data []byte, at int) []byte {
	b := append([]byte(nil), data...)
	b[at] ^= 0x04
	return b
}

// headerUsable is what planShard asks of a header.
func headerUsable(file string, data []byte) error {
	n, err := safetensors.HeaderLength(data, int64(len(data)))
	if err != nil {
		return err
	}
	h, err := safetensors.Parse(data[8:8+n], int64(len(data)))
	if err != nil {
		return err
	}
	_, err = checkpoint.IndexExperts(file, h)
	return err
}

// TestHeaderFlipOnDiskHeals: a byte of a held shard header flipped on disk
// (as a flip in transit would have stored it) at several offsets: the next
// Plan fetches the header again and the install completes identical.
func TestHeaderFlipOnDiskHeals(t *testing.T) {
	t.Parallel()
	h := newFakeHub(t)
	src := h.Files[healShard].Data
	for what, at := range headerFlips(t, src) {
		t.Run(what, func(t *testing.T) {
			t.Parallel()
			require.Error(t, headerUsable(healShard, flipped(src, at)), "the flip at %d breaks the header", at)
			dir := t.TempDir()
			m, _ := setup(t, t.Context(), options(h, dir), Stream)
			require.NoError(t, m.Close())
			path := filepath.Join(dir, healShard)
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			require.NoError(t, err)
			_, err = f.WriteAt(flipped(src, at)[at:at+1], int64(at))
			require.NoError(t, err)
			require.NoError(t, f.Close())

			setup(t, t.Context(), options(h, dir), Full)
			h.RequireIdentical(t, dir)
		})
	}
}

// TestHeaderAlwaysBrokenSaysRepair: a hub whose copy of a header is broken
// every time: Plan refuses, naming the file and `deltafin setup --repair`.
func TestHeaderAlwaysBrokenSaysRepair(t *testing.T) {
	t.Parallel()
	h := newFakeHub(t)
	src := h.Files[healShard].Data
	at := headerFlips(t, src)["expert tensor name"]
	requests := 0
	h.SetFault(func(w http.ResponseWriter, r *http.Request, f *fakeFile, start, end int64) bool {
		if f.Path != healShard || start > int64(at) || end <= int64(at) {
			return false
		}
		requests++
		bad := &fakeFile{Path: f.Path, Data: flipped(src, at)}
		hubtest.WriteRange(w, bad, start, end, int64(len(src)))
		return true
	})
	m, err := Open(options(h, t.TempDir()))
	require.NoError(t, err)
	defer m.Close()
	_, err = m.Plan(t.Context())
	require.ErrorIs(t, err, ErrDamaged)
	require.ErrorContains(t, err, healShard)
	require.ErrorContains(t, err, "deltafin setup --repair")
	require.Equal(t, 2, requests, "the header is fetched again once")
}

// TestRepairRefetchesWhatFails: a byte of a complete, verified file changed
// on disk is found by Repair's re-verification and fetched again; a flipped
// header of a partly held shard too.
func TestRepairRefetchesWhatFails(t *testing.T) {
	t.Parallel()
	h := newFakeHub(t)
	dir := t.TempDir()
	m, _ := setup(t, t.Context(), options(h, dir), Stream)
	require.NoError(t, m.Close())
	full := "model-00001-of-000004.safetensors"
	// Make one shard complete and verified, then damage it on disk.
	m, p := setup(t, t.Context(), options(h, dir), Stream)
	for _, f := range p.Files {
		if f.Path == full {
			require.NoError(t, m.Fetch(t.Context(), p, []Work{{full, Range{0, f.Size}}}))
		}
	}
	require.NoError(t, m.Close())
	damage := func(file string, at int64) {
		f, err := os.OpenFile(filepath.Join(dir, file), os.O_RDWR, 0)
		require.NoError(t, err)
		b := []byte{0}
		_, err = f.ReadAt(b, at)
		require.NoError(t, err)
		b[0] ^= 0x10
		_, err = f.WriteAt(b, at)
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
	damage(full, int64(len(h.Files[full].Data))-100)
	// And a byte of a partly held shard's header.
	hdr := h.Files[healShard].Data
	sp := bytes.Index(hdr, []byte(`"dtype"`))
	damage(healShard, int64(sp+1))

	m, err := Open(options(h, dir))
	require.NoError(t, err)
	defer m.Close()
	require.NoError(t, m.Repair(t.Context()))
	p, err = m.Plan(t.Context())
	require.NoError(t, err)
	require.NoError(t, m.Fetch(t.Context(), p, p.Work(Full)))
	h.RequireIdentical(t, dir)
}

// TestFileChangedAfterVerificationIsHealedBySetup: a byte of a complete,
// verified shard changes on disk afterwards. The next plain setup (no
// --repair) does not call it verified: it hashes the file again, finds the
// change, fetches the file again and ends identical to the hub.
func TestFileChangedAfterVerificationIsHealedBySetup(t *testing.T) {
	t.Parallel()
	h := newFakeHub(t)
	dir := t.TempDir()
	m, _ := setup(t, t.Context(), options(h, dir), Full)
	require.NoError(t, m.Close())
	path := filepath.Join(dir, healShard)
	st, err := os.Stat(path)
	require.NoError(t, err)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte{h.Files[healShard].Data[1000] ^ 0x20}, 1000)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	// The write moved the mtime, unless the clock has not ticked since the
	// verification; move it as a later write would, without waiting.
	require.NoError(t, os.Chtimes(path, st.ModTime().Add(time.Second), st.ModTime().Add(time.Second)))
	m, p := setup(t, t.Context(), options(h, dir), Full)
	all, err := m.Coverage(p.Work(Full))
	require.NoError(t, err)
	require.True(t, all.AllVerified())
	h.RequireIdentical(t, dir)
}
