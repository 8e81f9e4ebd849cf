package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltafin/deltafin/chat"
	"github.com/deltafin/deltafin/store"
	"github.com/stretchr/testify/require"
)

// withStore gives the server a store in a fresh directory.
func withStore(t testing.TB) (*store.Store, func(*Options)) {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), store.FileName))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st, func(o *Options) { o.Store = st }
}

func respBody(extra string) string {
	return fmt.Sprintf(`{"model":%q,"temperature":0,"input":"Hello there","max_output_tokens":12%s}`, tinyID, extra)
}

// expectResponse is what a direct engine run gives for a one-message
// conversation: the generated tokens and the rendered prompt.
func expectResponse(t *testing.T, msgs []chat.Message, maxNew int) chatExpect {
	t.Helper()
	return expectChat(t, msgs, chat.DefaultOptions(), maxNew)
}

func decodeResponse(t *testing.T, b []byte) Response {
	t.Helper()
	var r Response
	require.NoError(t, json.Unmarshal(b, &r), string(b))
	return r
}

func outputText(r Response) (reasoning, content string) {
	for _, it := range r.Output {
		for _, p := range it.Content {
			if it.Type == "reasoning" {
				reasoning += p.Text
			} else {
				content += p.Text
			}
		}
	}
	return
}

func TestResponsesCreate(t *testing.T) {
	t.Parallel()
	_, withSt := withStore(t)
	_, base := startServer(t, withSt)
	code, _, b := post(t, base+"/v1/responses", respBody(""))
	require.Equal(t, http.StatusOK, code, string(b))
	r := decodeResponse(t, b)
	require.Equal(t, "response", r.Object)
	require.True(t, strings.HasPrefix(r.ID, "resp_"))
	want := expectResponse(t, []chat.Message{{Role: "user", Content: "Hello there"}}, 12)
	require.Equal(t, len(want.prompt), r.Usage.InputTokens)
	require.Equal(t, len(want.tokens), r.Usage.OutputTokens)
	reasoning, content := outputText(r)
	require.Equal(t, want.reasoning+want.content, reasoning+content)
	require.Equal(t, "message", r.Output[len(r.Output)-1].Type)
	terminal := "response.completed"
	if want.finish == "length" {
		terminal = "response.incomplete"
		require.Equal(t, "incomplete", r.Status)
		require.Equal(t, "max_output_tokens", r.IncompleteDetails.Reason)
	} else {
		require.Equal(t, "completed", r.Status)
	}
	if want.reasoning != "" {
		require.Equal(t, "reasoning", r.Output[0].Type)
		require.Positive(t, r.Usage.OutputTokensDetails.ReasoningTokens)
	}

	// Retrieved as created.
	code, got := get(t, base+"/v1/responses/"+r.ID)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, r, decodeResponse(t, got))

	// The stream replays the same events whether followed live or later.
	code, live := get(t, base+"/v1/responses/"+r.ID+"?stream=true")
	require.Equal(t, http.StatusOK, code)
	events := parseNamed(t, string(live))
	require.Equal(t, "response.created", events[0].Type)
	require.Equal(t, terminal, events[len(events)-1].Type)
	require.Equal(t, r, *events[len(events)-1].Response, "the terminal event carries the stored response")
	for i, ev := range events {
		require.Equal(t, i, ev.SequenceNumber)
	}
	code, tail := get(t, base+"/v1/responses/"+r.ID+"?stream=true&starting_after=3")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, events[4:], parseNamed(t, string(tail)))
}

// parseNamed reads a Responses event stream: "event:" and "data:" lines,
// the type named twice and equal.
func parseNamed(t *testing.T, body string) []ResponseEvent {
	t.Helper()
	var out []ResponseEvent
	var name string
	for _, line := range strings.Split(body, "\n") {
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var ev ResponseEvent
			require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev))
			require.Equal(t, name, ev.Type)
			out = append(out, ev)
		}
	}
	return out
}
