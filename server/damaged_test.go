package server

import (
	"encoding/binary"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/deltafin/deltafin/store"
	"github.com/stretchr/testify/require"
)

// zeroFreelist zeroes the freelist page the newer meta page of a bbolt
// file names: the damage that made bbolt panic "invalid freelist page".
func zeroFreelist(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	le := binary.LittleEndian
	pageSize := int(le.Uint32(b[16+8:]))
	meta := 0
	if le.Uint64(b[pageSize+16+48:]) > le.Uint64(b[16+48:]) { // txid
		meta = pageSize
	}
	fl := int(le.Uint64(b[meta+16+32:])) * pageSize
	copy(b[fl:fl+pageSize], make([]byte, pageSize))
	require.NoError(t, os.WriteFile(path, b, 0o600))
}

// A damaged job store neither panics the server nor starts it silently
// empty: the file is moved aside, what can be read is served, and /health
// says what happened.
func TestDamagedStoreServed(t *testing.T) {
	t.Parallel()
	m, _ := tiny(t)
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, path string)
		kept   bool // the stored response survives
	}{
		{"freelist zeroed", zeroFreelist, true},
		{"empty", func(t *testing.T, path string) { require.NoError(t, os.WriteFile(path, nil, 0o600)) }, false},
		{"truncated", func(t *testing.T, path string) { require.NoError(t, os.Truncate(path, 4096)) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), store.FileName)
			_, base, stop := serveWithStore(t, FromEngine(m), path, nil)
			code, _, b := post(t, base+"/v1/responses", `{"model":"`+tinyID+`","input":"hi","store":true,"max_output_tokens":2}`)
			require.Equal(t, http.StatusOK, code, string(b))
			var r Response
			require.NoError(t, json.Unmarshal(b, &r))
			stop()

			tc.damage(t, path)
			_, base, stop = serveWithStore(t, FromEngine(m), path, nil)
			defer stop()
			code, hb := get(t, base+"/health")
			require.Equal(t, http.StatusOK, code)
			var h Health
			require.NoError(t, json.Unmarshal(hb, &h), string(hb))
			require.NotNil(t, h.StoreRecovered, "/health says the store was damaged: %s", hb)
			require.FileExists(t, h.StoreRecovered.MovedTo)
			require.NotEmpty(t, h.StoreRecovered.Reason)
			code, gb := get(t, base+"/v1/responses/"+r.ID)
			if tc.kept {
				require.Equal(t, http.StatusOK, code, string(gb))
				require.Equal(t, 1, h.StoreRecovered.Jobs)
			} else {
				require.Equal(t, http.StatusNotFound, code, string(gb))
			}
		})
	}
}
