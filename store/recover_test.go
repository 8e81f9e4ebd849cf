package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// sixJobs writes a store with six jobs (tokens, one still pending) and a
// conversation, closes it and returns its bytes.
func sixJobs(t *testing.T, path string) []byte {
	t.Helper()
	s, err := Open(path)
	require.NoError(t, err)
	for i := range 6 {
		id := fmt.Sprint("resp_", i)
		require.NoError(t, s.Create(&Job{ID: id, Kind: "response", Request: json.RawMessage(`{"input":"` + strings.Repeat("x", 300*i) + `"}`)}))
		require.NoError(t, s.AppendTokens(id, []int{1, 2, 3}))
		if i != 5 {
			require.NoError(t, s.Finish(id, Completed, []int{4}, json.RawMessage(`{"ok":true}`), ""))
		}
	}
	require.NoError(t, s.SaveConversation(&Conversation{ID: "conv_1"}))
	require.NoError(t, s.Close())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

// A damaged deltafin.db never panics the opener and never starts it empty
// without a word: the file is moved aside, what bbolt can read of it is
// kept, and Recovered says so. (Today a truncated file faults bbolt, a
// zeroed one is refused, an empty one is silently a new store.)
func TestDamagedStoreRecovered(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		damage  func([]byte) []byte
		minJobs int // what must be salvaged at least
	}{
		{"empty", func([]byte) []byte { return nil }, 0},
		{"zeroed", func(b []byte) []byte { return make([]byte, len(b)) }, 0},
		{"truncated to half", func(b []byte) []byte { return b[:len(b)/2] }, 0},
		{"truncated to the metas", func(b []byte) []byte { return b[:8192] }, 0},
		{"freelist zeroed", func(b []byte) []byte {
			m, _ := bestMeta(b)
			c := append([]byte(nil), b...)
			fl := int(leFreelist(b, m)) * int(m.pageSize)
			copy(c[fl:fl+int(m.pageSize)], make([]byte, m.pageSize))
			return c
		}, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), FileName)
			good := sixJobs(t, path)
			require.NoError(t, os.WriteFile(path, tc.damage(good), 0o600))
			s, err := Open(path)
			require.NoError(t, err)
			defer s.Close()
			r := s.Recovered()
			require.NotNil(t, r, "the damage is reported")
			require.FileExists(t, r.MovedTo)
			require.True(t, strings.HasPrefix(filepath.Base(r.MovedTo), FileName+".damaged-"), r.MovedTo)
			kept, err := os.ReadFile(r.MovedTo)
			require.NoError(t, err)
			require.True(t, bytes.Equal(tc.damage(good), kept), "the damaged file is kept as it was")
			require.GreaterOrEqual(t, r.Jobs, tc.minJobs)
			t.Logf("%s: %s", tc.name, r)
			require.NoError(t, s.Check())
			pending, err := s.Pending()
			require.NoError(t, err)
			require.LessOrEqual(t, len(pending), 1)
			require.NoError(t, s.Create(&Job{ID: "resp_new", Request: json.RawMessage(`{}`)}), "the new store works")
			j, toks, err := s.Get("resp_new")
			require.NoError(t, err)
			require.Empty(t, toks)
			if r.Jobs == 6 {
				require.Greater(t, j.Seq, uint64(6), "sequence numbers go on past the salvaged jobs'")
			}
		})
	}
	// A healthy store is left alone.
	path := filepath.Join(t.TempDir(), FileName)
	sixJobs(t, path)
	s, err := Open(path)
	require.NoError(t, err)
	require.Nil(t, s.Recovered())
	require.NoError(t, s.Close())
}

// leFreelist is the freelist page id of meta m's page.
func leFreelist(b []byte, m meta) uint64 {
	for _, off := range []int{0, int(m.pageSize)} {
		if mm, ok := readMeta(b, off); ok && mm.txid == m.txid {
			return binary.LittleEndian.Uint64(b[off+metaOffset+32:])
		}
	}
	return 0
}
