package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/deltafin/deltafin/chat"
	"github.com/deltafin/deltafin/store"
	"github.com/stretchr/testify/require"
)

// TestShutdownKeepsJobs: a server shut down while a background response
// decodes and another waits (the app quitting) stores both as pending with
// their tokens so far; a new server on the same store resumes them in
// order and each ends with a direct engine run's answer.
func TestShutdownKeepsJobs(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), store.FileName)
	m, _ := tiny(t)
	serve := func() (*Server, string, func()) {
		return serveWithStore(t, FromEngine(m), path, func(o *Options) { o.MemoEntries = 0 })
	}
	const n = 400
	create := func(base, input string) string {
		code, _, b := post(t, base+"/v1/responses", fmt.Sprintf(`{"model":%q,"temperature":0,"input":%q,"max_output_tokens":%d,"background":true}`, tinyID, input, n))
		require.Equal(t, http.StatusOK, code, string(b))
		return decodeResponse(t, b).ID
	}
	s, base, stop := serve()
	first := create(base, "Tell me everything.")
	second := create(base, "And more.")
	require.Eventually(t, func() bool {
		q := s.Queue()
		return q.Running != nil && q.Running.ID == first && q.Running.Tokens > 5 && len(q.Queued) == 1
	}, waitLong, pollEvery)
	stop()

	st, err := store.Open(path)
	require.NoError(t, err)
	pending, err := st.Pending()
	require.NoError(t, err)
	require.Len(t, pending, 2)
	require.Equal(t, first, pending[0].ID)
	require.Equal(t, store.InProgress, pending[0].State)
	require.Equal(t, second, pending[1].ID)
	_, toks, err := st.Get(first)
	require.NoError(t, err)
	t.Logf("stored at shutdown: %d tokens", len(toks))
	require.NoError(t, st.Close())

	_, base, stop = serve()
	defer stop()
	for id, input := range map[string]string{first: "Tell me everything.", second: "And more."} {
		var r Response
		require.Eventually(t, func() bool {
			code, b := get(t, base+"/v1/responses/"+id)
			require.Equal(t, http.StatusOK, code, string(b))
			require.NoError(t, json.Unmarshal(b, &r))
			return r.Status != "queued" && r.Status != "in_progress"
		}, waitLong, pollEvery)
		want := expectResponse(t, []chat.Message{{Role: "user", Content: input}}, n)
		reasoning, content := outputText(r)
		require.Equal(t, want.reasoning+want.content, reasoning+content, id)
		require.Equal(t, len(want.tokens), r.Usage.OutputTokens)
	}
}
