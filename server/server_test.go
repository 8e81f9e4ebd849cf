package server

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestModelsAndHealth(t *testing.T) {
	_, base := startServer(t, nil)

	code, body := get(t, base+"/v1/models")
	require.Equal(t, http.StatusOK, code)
	var list ModelList
	require.NoError(t, json.Unmarshal(body, &list))
	require.Equal(t, "list", list.Object)
	require.Len(t, list.Data, 1)
	require.Equal(t, tinyID, list.Data[0].ID)
	require.Equal(t, "model", list.Data[0].Object)

	code, body = get(t, base+"/v1/models/"+tinyID)
	require.Equal(t, http.StatusOK, code)
	require.JSONEq(t, compact(t, list.Data[0]), string(body))

	code, body = get(t, base+"/v1/models/gpt-4o")
	require.Equal(t, http.StatusNotFound, code)
	e := decodeError(t, body)
	require.Equal(t, "model_not_found", *e.Code)

	code, body = get(t, base+"/health")
	require.Equal(t, http.StatusOK, code)
	require.JSONEq(t, `{"status":"ok","model":"`+tinyID+`","busy":false,"queued":0,"queue":{"running":null,"queued":[],"depth":32,
		"prefill_tokens_per_second":0,"decode_tokens_per_second":0,"generated_tokens":0},
		"drafting":{"target_passes":0,"verify_passes":0,"drafted_tokens":0,"accepted_tokens":0,"bytes_per_token":0}}`, string(body))

	code, body = get(t, base+"/v1/embeddings")
	require.Equal(t, http.StatusNotFound, code)
	require.Equal(t, "not_found", *decodeError(t, body).Code)

	code, body = get(t, base+"/v1/chat/completions")
	require.Equal(t, http.StatusMethodNotAllowed, code)
	decodeError(t, body)
}

// TestRefusedBeforeWork: every refusal comes before the engine runs.
func TestRefusedBeforeWork(t *testing.T) {
	s, base := startServer(t, func(o *Options) { o.BodyLimit = 4096 })
	chat := base + "/v1/chat/completions"
	tests := []struct {
		name   string
		url    string
		body   string
		header []string
		status int
		param  string
	}{
		{"n", chat, `{"model":"` + tinyID + `","temperature":0,"messages":[{"role":"user","content":"hi"}],"n":3}`, nil, 400, "n"},
		{"stop", base + "/v1/completions", `{"model":"` + tinyID + `","temperature":0,"prompt":"hi","stop":["."," ","a","b","c"]}`, nil, 400, "stop"},
		{"image", chat, `{"model":"` + tinyID + `","temperature":0,"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"http://x/y.png"}}]}]}`, nil, 400, "messages[0].content[0]"},
		{"unknown field", chat, `{"model":"` + tinyID + `","temperature":0,"messages":[{"role":"user","content":"hi"}],"temprature":0}`, nil, 400, "temprature"},
		{"no model", chat, `{"messages":[{"role":"user","content":"hi"}]}`, nil, 400, "model"},
		{"token id out of range", base + "/v1/completions", `{"model":"` + tinyID + `","temperature":0,"prompt":[5,99999]}`, nil, 400, "prompt[1]"},
		{"not json content type", chat, `{}`, []string{"Content-Type", "text/plain"}, 415, ""},
		{"too large", chat, `{"model":"` + tinyID + `","temperature":0,"messages":[{"role":"user","content":"` + strings.Repeat("a", 5000) + `"}]}`, nil, 413, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, body := post(t, tc.url, tc.body, tc.header...)
			require.Equal(t, tc.status, code, string(body))
			e := decodeError(t, body)
			if tc.param != "" {
				require.NotNil(t, e.Param)
				require.Equal(t, tc.param, *e.Param)
			}
		})
	}
	require.Zero(t, s.generations.Load())
}

func TestHostAndOrigin(t *testing.T) {
	_, base := startServer(t, nil)
	port := base[strings.LastIndex(base, ":")+1:]
	tests := []struct {
		name   string
		host   string
		origin string
		status int
	}{
		{"loopback ip", "127.0.0.1:" + port, "", 200},
		{"localhost", "localhost:" + port, "", 200},
		{"localhost subdomain", "app.localhost:" + port, "", 200},
		{"ipv6 loopback", "[::1]:" + port, "", 200},
		{"lan ip", "192.168.1.20:" + port, "", 200},
		{"rebinding name", "evil.example.com:" + port, "", 403},
		{"rebinding name without port", "attacker.test", "", 403},
		{"foreign origin", "127.0.0.1:" + port, "https://evil.example.com", 403},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/v1/models", nil)
			require.NoError(t, err)
			req.Host = tc.host
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, tc.status, resp.StatusCode, string(body))
			if tc.status != 200 {
				require.Equal(t, "forbidden", *decodeError(t, body).Code)
			}
		})
	}
}

func TestHostAllowed(t *testing.T) {
	tests := []struct {
		host, configured string
		want             bool
	}{
		{"127.0.0.1:8000", "127.0.0.1", true},
		{"LOCALHOST:8000", "127.0.0.1", true},
		{"localhost.", "127.0.0.1", true},
		{"mac.local:8000", "mac.local", true},
		{"mac.local:8000", "0.0.0.0", false},
		{"", "127.0.0.1", false},
		{"localhost.evil.com", "127.0.0.1", false},
		{"[fe80::1]:8000", "::", true},
	}
	for _, tc := range tests {
		t.Run(tc.host+"/"+tc.configured, func(t *testing.T) {
			require.Equal(t, tc.want, hostAllowed(tc.host, tc.configured))
		})
	}
}

func TestAPIKey(t *testing.T) {
	_, base := startServer(t, func(o *Options) { o.APIKey = "sekrit" })
	tests := []struct {
		name   string
		path   string
		auth   string
		status int
	}{
		{"missing", "/v1/models", "", 401},
		{"wrong", "/v1/models", "Bearer nope", 401},
		{"wrong scheme", "/v1/models", "Basic sekrit", 401},
		{"right", "/v1/models", "Bearer sekrit", 200},
		{"health needs none", "/health", "", 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var header []string
			if tc.auth != "" {
				header = []string{"Authorization", tc.auth}
			}
			code, body := get(t, base+tc.path, header...)
			require.Equal(t, tc.status, code, string(body))
			if code == 401 {
				require.Equal(t, "invalid_api_key", *decodeError(t, body).Code)
			}
		})
	}
}

func TestCORS(t *testing.T) {
	const ext = "chrome-extension://abcdef"
	_, base := startServer(t, func(o *Options) { o.CORSOrigins = []string{ext}; o.APIKey = "k" })

	preflight := func(origin string) *http.Response {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodOptions, base+"/v1/chat/completions", nil)
		require.NoError(t, err)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "authorization,content-type,x-stainless-os")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		return resp
	}
	resp := preflight(ext)
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.Equal(t, ext, resp.Header.Get("Access-Control-Allow-Origin"))
	allowed := strings.ToLower(resp.Header.Get("Access-Control-Allow-Headers"))
	for _, h := range []string{"authorization", "content-type", "x-stainless-os"} {
		require.Contains(t, allowed, h)
	}
	require.Contains(t, resp.Header.Get("Access-Control-Allow-Methods"), "POST")

	resp = preflight("https://evil.example.com")
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"))

	code, body := get(t, base+"/v1/models", "Origin", ext, "Authorization", "Bearer k")
	require.Equal(t, http.StatusOK, code, string(body))
}

// TestSlowBody: a body that does not arrive in time is refused with 408,
// and the deadline is gone once the body is read (see TestQueue, where a
// stream outlives both timeouts).
func TestSlowBody(t *testing.T) {
	_, base := startServer(t, func(o *Options) { o.BodyTimeout = 100 * time.Millisecond })
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"model\":")
	require.NoError(t, err)
	// Send nothing more: the server must give up on the body by itself.
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(30*time.Second)))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusRequestTimeout, resp.StatusCode, string(body))
	require.Equal(t, "timeout", *decodeError(t, body).Code)
}

// flushCounter stands for an embedding app's wrapper around the handler
// (the menu bar watches answers this way).
type flushCounter struct {
	http.ResponseWriter
	flushes atomic.Int64
}

func (f *flushCounter) Flush() {
	f.flushes.Add(1)
	_ = http.NewResponseController(f.ResponseWriter).Flush()
}

func (f *flushCounter) Unwrap() http.ResponseWriter { return f.ResponseWriter }

// TestEmbeddedHandlerFlushes: a Server is an http.Handler, and a stream
// flushes through any wrapper between it and net/http.
func TestEmbeddedHandlerFlushes(t *testing.T) {
	m, tok := tiny(t)
	s, err := New(DefaultOptions(), FromEngine(m), tok)
	require.NoError(t, err)
	var seen atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f := &flushCounter{ResponseWriter: w}
		s.ServeHTTP(f, r)
		seen.Store(f.flushes.Load())
	}))
	defer srv.Close()
	resp, next := stream(t, t.Context(), srv.URL+"/v1/completions",
		`{"model":"`+tinyID+`","temperature":0,"prompt":[1,2,3],"max_tokens":4,"stream":true}`)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	data, _ := readAll(t, next)
	require.Equal(t, "[DONE]", data[len(data)-1])
	require.GreaterOrEqual(t, seen.Load(), int64(len(data)), "every event was flushed through the wrapper")
}

func TestNewRefusesBadOptions(t *testing.T) {
	m, tok := tiny(t)
	tests := []struct {
		name string
		edit func(*Options)
	}{
		{"body limit", func(o *Options) { o.BodyLimit = 0 }},
		{"heartbeat", func(o *Options) { o.Heartbeat = 0 }},
		{"body timeout", func(o *Options) { o.BodyTimeout = -time.Second }},
		{"queue", func(o *Options) { o.Queue = -1 }},
		{"memo", func(o *Options) { o.MemoBytes = -1 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := DefaultOptions()
			tc.edit(&opts)
			_, err := New(opts, FromEngine(m), tok)
			require.ErrorContains(t, err, "server: ")
		})
	}
}
