package server

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/deltafin/deltafin/chat"
	"github.com/stretchr/testify/require"
)

// primingProxy stands on loopback in front of the server at base and,
// before forwarding a chat request that forces a tool, stores answer(g) in
// the server's memo for exactly that request (when answer returns ids), so
// that any client's own request shape is primed. It records every request
// it saw.
type primingProxy struct {
	mu   sync.Mutex
	seen []*genRequest
}

func startPrimingProxy(t *testing.T, s *Server, base string, answer func(g *genRequest) []int) (*primingProxy, string) {
	t.Helper()
	target, err := url.Parse(base)
	require.NoError(t, err)
	p := &primingProxy{}
	rp := httputil.NewSingleHostReverseProxy(target)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		require.NoError(t, err)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if r.URL.Path == "/v1/chat/completions" {
			g, ae := decodeChat(body, limits{modelID: s.meta.id, vocabSize: s.meta.vocabSize})
			if ae != nil {
				t.Errorf("the client sent a request the server refuses: %v: %s", ae, body)
			} else {
				p.mu.Lock()
				p.seen = append(p.seen, g)
				p.mu.Unlock()
				if ids := answer(g); ids != nil {
					j, ae := s.plan(g)
					require.Nil(t, ae)
					s.memo.put(j.key, memoValue{tokens: ids, finish: "stop"})
				}
			}
		}
		rp.ServeHTTP(w, r)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: handler}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return p, "http://" + ln.Addr().String()
}

type frameworkCall struct {
	Name string         `json:"name"`
	Args map[string]any `json:"args"`
	ID   string         `json:"id"`
}

type frameworkRun struct {
	ToolCalls []frameworkCall `json:"tool_calls"`
	Invalid   int             `json:"invalid_tool_calls"`
	Results   []string        `json:"results"`
	Executed  []map[string]any
	Finish    string `json:"finish"`
	Content   string `json:"content"`
	Error     string `json:"error"`
}

func runFrameworks(t *testing.T, base, user string) map[string]frameworkRun {
	t.Helper()
	var got map[string]frameworkRun
	runNode(t, &got, "frameworks.mjs", base+"/v1", tinyID, user)
	return got
}

// TestNodeFrameworks: LangChain's bindTools with tool_choice and the AI
// SDK's generateText and streamText with tools and toolChoice, each forcing
// get_weather. Primed with K3's call, the frameworks get the call with its
// parsed arguments (the AI SDK runs the tool); on what k3-tiny writes
// itself, they get no call, and the content and finish a direct run gives.
func TestNodeFrameworks(t *testing.T) {
	s, base := startServer(t, func(o *Options) { o.MemoEntries = 64 })
	_, tok := tiny(t)
	call := tok.EncodeSpecial(`<|open|>argument key="city" type="string"<|sep|>Paris<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|>`)
	primed := true
	proxy, pbase := startPrimingProxy(t, s, base, func(g *genRequest) []int {
		if primed && g.toolName == "get_weather" {
			return call
		}
		return nil
	})

	got := runFrameworks(t, pbase, "Weather in Paris?")
	for _, name := range []string{"langchain", "langchain_stream", "aisdk", "aisdk_stream"} {
		t.Run("primed "+name, func(t *testing.T) {
			r := got[name]
			require.Len(t, r.ToolCalls, 1)
			require.Equal(t, "get_weather", r.ToolCalls[0].Name)
			require.Equal(t, map[string]any{"city": "Paris"}, r.ToolCalls[0].Args)
			require.Regexp(t, `^call_[0-9a-f]{24}$`, r.ToolCalls[0].ID)
			require.Zero(t, r.Invalid)
			if strings.HasPrefix(name, "aisdk") {
				require.Equal(t, []map[string]any{{"city": "Paris"}}, r.Executed, "the AI SDK ran the tool")
				require.Equal(t, []string{"sunny in Paris"}, r.Results)
				require.Equal(t, "tool-calls", r.Finish)
			} else {
				require.Equal(t, "tool_calls", r.Finish)
			}
		})
	}
	proxy.mu.Lock()
	require.Len(t, proxy.seen, 4)
	for _, g := range proxy.seen {
		require.Equal(t, "get_weather", g.toolName, "every framework forced the function by name")
	}
	proxy.seen = nil
	proxy.mu.Unlock()

	primed = false
	got = runFrameworks(t, pbase, "Weather in Lyon?")
	proxy.mu.Lock()
	seen := proxy.seen
	proxy.mu.Unlock()
	require.Len(t, seen, 4)
	for i, name := range []string{"langchain", "aisdk", "langchain_stream", "aisdk_stream"} {
		t.Run("tiny "+name, func(t *testing.T) {
			g := seen[i]
			opts := chatOptions(g)
			prompt, err := chat.Prompt(tok, chatMessages(g.messages), opts)
			require.NoError(t, err)
			toks, res := direct(t, prompt, g.maxTokens, chat.StopTokens(tok))
			p := chat.NewTokenParserWith(tok, opts, chat.ParseOptions{})
			for _, id := range toks {
				p.Events(id)
			}
			p.FinishEvents(res.FinishReason == "length")
			out := p.Output()
			r := got[name]
			require.Len(t, r.ToolCalls, len(out.Calls))
			require.Equal(t, overJSON(t, out.Content), r.Content)
			t.Logf("%s on k3-tiny's own output: finish %q, error %q, %d calls (parser: %v)", name, r.Finish, r.Error, len(r.ToolCalls), out.Err)
			if out.Err != nil && res.FinishReason == "length" {
				require.Equal(t, "length", r.Finish)
			}
			require.Empty(t, r.Executed, "no tool runs on a call that did not parse")
			if strings.HasPrefix(name, "aisdk") && len(out.Calls) == 0 {
				require.Equal(t, "AI_ToolChoiceViolationError", r.Error, "the AI SDK refuses an answer without the forced call")
			} else {
				require.Empty(t, r.Error)
			}
		})
	}
}

// overJSON is s as a client reads it from a JSON body (invalid UTF-8
// becomes U+FFFD).
func overJSON(t *testing.T, s string) string {
	t.Helper()
	b, err := json.Marshal(s)
	require.NoError(t, err)
	var back string
	require.NoError(t, json.Unmarshal(b, &back))
	return back
}
