package server

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestShutdownEndsStreamsWithAnError: a stream the server's shutdown cuts
// ends with an error event and [DONE], the way OpenAI's SDKs raise it, not a
// silent cut.
func TestShutdownEndsStreamsWithAnError(t *testing.T) {
	t.Parallel()
	m, tok := tiny(t)
	opts := DefaultOptions()
	opts.Port = 0
	s, err := New(opts, FromEngine(m), tok)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, shutdown := context.WithCancel(context.Background())
	defer shutdown()
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()

	body := `{"model":"deltafin-kimi-k3","prompt":"Once upon a time","max_tokens":100000,"stream":true}`
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+ln.Addr().String()+"/v1/completions", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	sc := bufio.NewScanner(resp.Body)
	var lines []string
	for sc.Scan() {
		l := sc.Text()
		if !strings.HasPrefix(l, "data: ") {
			continue
		}
		lines = append(lines, l)
		if len(lines) == 3 { // tokens are flowing: stop the server now
			shutdown()
		}
	}
	require.NoError(t, <-done)
	require.GreaterOrEqual(t, len(lines), 5)
	require.Equal(t, "data: [DONE]", lines[len(lines)-1])
	last := lines[len(lines)-2]
	require.Contains(t, last, `"code":"server_shutting_down"`)
	require.Contains(t, last, `"type":"server_error"`)
}

// TestNoHostHeaderGetsTheJSONError: a request without a Host header (HTTP
// 1.0 allows it) is refused in OpenAI's error shape like any other.
func TestNoHostHeaderGetsTheJSONError(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, nil)
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Write([]byte("GET /v1/models HTTP/1.0\r\n\r\n"))
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	var e struct {
		Error struct{ Message, Type, Code string }
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
	require.Equal(t, "forbidden", e.Error.Code)
	require.Contains(t, e.Error.Message, `host "" is not allowed`)
}
