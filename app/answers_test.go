package app

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWatchGenerations serves OpenAI-shaped answers on loopback through the
// wrapper and checks what it reports.
func TestWatchGenerations(t *testing.T) {
	api := http.NewServeMux()
	api.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("stream") == "" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"choices":[{"message":{"role":"assistant","content":"Paris is the capital.","reasoning_content":"think"}}]}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		fmt.Fprint(w, ": keep-alive\n\n")
		fl.Flush()
		fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"hmm\"}}]}\n\n")
		for _, part := range []string{"The ", "capital ", "is ", "Paris."} {
			fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{\"content\":%q}}]}\r\n\r\n", part)
			fl.Flush()
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	})
	api.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("fail") != "" {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":{"message":"bad"}}`)
			return
		}
		fmt.Fprint(w, `{"choices":[{"text":" and so on"}]}`)
	})
	api.HandleFunc("POST /v1/messages", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("stream") == "" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"type":"message","content":[{"type":"thinking","thinking":"hmm","signature":"s"},{"type":"text","text":"Lyon is not the capital."}]}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: ping\ndata: {\"type\":\"ping\"}\n\n")
		fmt.Fprint(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hmm\"}}\n\n")
		for _, part := range []string{"Paris ", "it is."} {
			fmt.Fprintf(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":%q}}\n\n", part)
		}
		fmt.Fprint(w, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	})
	api.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{}`) })

	var mu sync.Mutex
	var answers []string
	holders, released := 0, 0
	h := watchGenerations(api, func(string) func() {
		mu.Lock()
		holders++
		mu.Unlock()
		return func() { mu.Lock(); released++; mu.Unlock() }
	}, func(d time.Duration, answer string) {
		mu.Lock()
		answers = append(answers, answer)
		mu.Unlock()
	})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	for _, tc := range []struct {
		name, method, path string
		want               []string
	}{
		{"chat", "POST", "/v1/chat/completions", []string{"Paris is the capital."}},
		{"chat streamed", "POST", "/v1/chat/completions?stream=1", []string{"The capital is Paris."}},
		{"completion", "POST", "/v1/completions", []string{" and so on"}},
		{"anthropic", "POST", "/v1/messages", []string{"Lyon is not the capital."}},
		{"anthropic streamed", "POST", "/v1/messages?stream=1", []string{"Paris it is."}},
		{"refused", "POST", "/v1/completions?fail=1", nil},
		{"not a generation", "GET", "/v1/models", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			answers, holders, released = nil, 0, 0
			mu.Unlock()
			req, err := http.NewRequestWithContext(t.Context(), tc.method, srv.URL+tc.path, strings.NewReader("{}"))
			require.NoError(t, err)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			require.NotEmpty(t, body, "the client still gets the whole response")
			mu.Lock()
			defer mu.Unlock()
			require.Equal(t, tc.want, answers)
			gen := tc.method == "POST"
			require.Equal(t, map[bool]int{true: 1, false: 0}[gen], holders)
			require.Equal(t, holders, released)
		})
	}
}
