package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deltafin/deltafin/chat"
	"github.com/deltafin/deltafin/store"
	"github.com/stretchr/testify/require"
)

// TestHostShutdownSeparatesLifetimes: a Host shut down while a background
// response decodes and a streamed chat request waits in line ends the
// request (its stream gets the shutdown's error event and [DONE]) and
// keeps the job pending in the store with its tokens; the next Host on the
// same store resumes it to the answer of a direct engine run.
func TestHostShutdownSeparatesLifetimes(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), store.FileName)
	m, _ := tiny(t)
	const n = 300
	s, base, stop := serveWithStore(t, FromEngine(m), path, func(o *Options) { o.MemoEntries = 0 })
	code, _, b := post(t, base+"/v1/responses", fmt.Sprintf(`{"model":%q,"temperature":0,"input":"Tell me everything.","max_output_tokens":%d,"background":true}`, tinyID, n))
	require.Equal(t, http.StatusOK, code, string(b))
	id := decodeResponse(t, b).ID
	require.Eventually(t, func() bool {
		q := s.Queue()
		return q.Running != nil && q.Running.ID == id && q.Running.Tokens > 5
	}, waitLong, pollEvery)

	resp, next := stream(t, t.Context(), base+"/v1/chat/completions",
		fmt.Sprintf(`{"model":%q,"temperature":0,"messages":[{"role":"user","content":"Hi"}],"max_tokens":50,"stream":true}`, tinyID))
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Eventually(t, func() bool { return len(s.Queue().Queued) == 1 }, waitLong, pollEvery, "the streamed request waits behind the job")

	stop() // Host.Shutdown, then the store closes
	data, _ := readAll(t, next)
	require.GreaterOrEqual(t, len(data), 2, "%v", data)
	require.Equal(t, "[DONE]", data[len(data)-1])
	require.Contains(t, data[len(data)-2], `"code":"server_shutting_down"`)

	st, err := store.Open(path)
	require.NoError(t, err)
	pending, err := st.Pending()
	require.NoError(t, err)
	require.Len(t, pending, 1, "the job outlives the shutdown; the request does not")
	require.Equal(t, id, pending[0].ID)
	_, toks, err := st.Get(id)
	require.NoError(t, err)
	require.NotEmpty(t, toks, "its tokens so far are stored")
	require.NoError(t, st.Close())

	_, base, stop = serveWithStore(t, FromEngine(m), path, func(o *Options) { o.MemoEntries = 0 })
	defer stop()
	var r Response
	require.Eventually(t, func() bool {
		code, b := get(t, base+"/v1/responses/"+id)
		require.Equal(t, http.StatusOK, code, string(b))
		require.NoError(t, json.Unmarshal(b, &r))
		return r.Status != "queued" && r.Status != "in_progress"
	}, waitLong, pollEvery)
	want := expectResponse(t, []chat.Message{{Role: "user", Content: "Tell me everything."}}, n)
	reasoning, content := outputText(r)
	require.Equal(t, want.reasoning+want.content, reasoning+content)
	require.Equal(t, len(want.tokens), r.Usage.OutputTokens)
}

// TestHostHeaderTimeout: a client that never finishes its headers is cut
// after Options.HeaderTimeout (here 50 ms; the default is 10 s, past this
// test's read deadline).
func TestHostHeaderTimeout(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, func(o *Options) { o.HeaderTimeout = 50 * time.Millisecond })
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Write([]byte("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n"))
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	b, err := io.ReadAll(conn)
	require.NoError(t, err, "the server closes the connection (a timeout here: it waited past the header timeout)")
	require.Empty(t, b)
}

// TestListenPortInUse: a taken port reads ErrPortInUse naming the address
// (a second server on one port); with PortTries the next free port is
// taken instead.
func TestListenPortInUse(t *testing.T) {
	t.Parallel()
	first, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer first.Close()
	port := first.Addr().(*net.TCPAddr).Port
	opts := DefaultOptions()
	opts.Port = port
	_, err = Listen(t.Context(), opts)
	require.ErrorIs(t, err, ErrPortInUse)
	require.Contains(t, err.Error(), "127.0.0.1:"+strconv.Itoa(port))
	require.Contains(t, err.Error(), "another program listens there")

	opts.PortTries = 5
	ln, err := Listen(t.Context(), opts)
	require.NoError(t, err)
	defer ln.Close()
	got := ln.Addr().(*net.TCPAddr).Port
	require.Greater(t, got, port)
	require.LessOrEqual(t, got, port+5)

	opts.PortTries = -1
	_, err = Listen(t.Context(), opts)
	require.ErrorContains(t, err, "negative port tries")
}

// TestListenBesideAnotherDeltafin: a second server on a Deltafin's port
// is told which model the first one serves there.
func TestListenBesideAnotherDeltafin(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, nil)
	port, err := strconv.Atoi(base[strings.LastIndexByte(base, ':')+1:])
	require.NoError(t, err)
	opts := DefaultOptions()
	opts.Port = port
	_, err = Listen(t.Context(), opts)
	require.ErrorIs(t, err, ErrPortInUse)
	require.ErrorContains(t, err, "another Deltafin serves "+tinyID+" there")
}

// TestHostListenerFails: a Host whose listener fails is Done, and its
// Shutdown says why (once, however often it is called); the Server does
// not start again.
func TestHostListenerFails(t *testing.T) {
	t.Parallel()
	m, tok := tiny(t)
	s, err := New(DefaultOptions(), FromEngine(m), tok)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	h, err := s.Start(ln, nil)
	require.NoError(t, err)
	require.NoError(t, ln.Close()) // from outside the Host
	select {
	case <-h.Done():
	case <-time.After(waitLong):
		t.Fatal("the Host did not notice its listener failed")
	}
	err = h.Shutdown(context.Background())
	require.True(t, errors.Is(err, net.ErrClosed), "%v", err)
	require.Equal(t, err, h.Shutdown(context.Background()))

	again, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	_, err = s.Start(again, nil)
	require.ErrorContains(t, err, "started twice")
	_, err = again.Accept()
	require.ErrorIs(t, err, net.ErrClosed, "the listener is closed with the refusal")
}
