package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// longChat is a streamed generation that would run far longer than any
// test: the tests end it by disconnecting.
var longChat = `{"model":"` + tinyID + `","temperature":0,"messages":[{"role":"user","content":"Tell me everything."}],"max_tokens":100000,"stream":true}`

// startLong starts longChat and returns once the engine is generating
// (a content or reasoning delta arrived), with a cancel that disconnects.
func startLong(t *testing.T, s *Server, base string, header ...string) (cancel func(), next func() (sseEvent, bool)) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	resp, next := stream(t, ctx, base+"/v1/chat/completions", longChat, header...)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	t.Cleanup(func() { _ = resp.Body.Close() })
	for range 3 { // the role chunk, then two deltas: the engine runs
		for {
			ev, ok := next()
			require.True(t, ok, "stream ended early")
			if !ev.comment {
				break
			}
		}
	}
	busy, _ := s.queue.counts()
	require.True(t, busy)
	return cancel, next
}

func TestBusy(t *testing.T) {
	s, base := startServer(t, func(o *Options) { o.RetryAfter, o.Queue = 3*time.Second, 0 })
	cancel, _ := startLong(t, s, base)

	code, header, body := post(t, base+"/v1/completions", `{"model":"`+tinyID+`","temperature":0,"prompt":"hello","max_tokens":2}`)
	require.Equal(t, http.StatusTooManyRequests, code, string(body))
	require.Equal(t, "3", header.Get("Retry-After"))
	e := decodeError(t, body)
	require.Equal(t, "engine_busy", *e.Code)

	// The cheap endpoints answer while the engine works.
	code, b := get(t, base+"/health")
	require.Equal(t, http.StatusOK, code)
	var h Health
	require.NoError(t, json.Unmarshal(b, &h))
	require.True(t, h.Busy)
	code, _ = get(t, base+"/v1/models")
	require.Equal(t, http.StatusOK, code)

	cancel()
	waitIdle(t, s)
	code, _, body = post(t, base+"/v1/completions", `{"model":"`+tinyID+`","temperature":0,"prompt":"hello","max_tokens":2}`)
	require.Equal(t, http.StatusOK, code, string(body))
}

// TestQueue: with --queue 1 a second request waits its turn (in FIFO
// order, see TestGateQueueIsFIFO) while a third is refused; the waiting
// stream gets heartbeat comments and outlives the header and body
// timeouts, which never cut a generation.
func TestQueue(t *testing.T) {
	s, base := startServer(t, func(o *Options) {
		o.Queue = 1
		o.Heartbeat = 10 * time.Millisecond
		o.HeaderTimeout = 50 * time.Millisecond
		o.BodyTimeout = 50 * time.Millisecond
		o.MemoEntries = 0
	})
	cancel, _ := startLong(t, s, base)

	_, tok := tiny(t)
	ids := tok.Encode("queued")
	waiter, next := stream(t, t.Context(), base+"/v1/completions",
		fmt.Sprintf(`{"model":%q,"temperature":0,"prompt":%s,"max_tokens":4,"stream":true}`, tinyID, compact(t, ids)))
	defer waiter.Body.Close()
	require.Equal(t, http.StatusOK, waiter.StatusCode)
	require.Eventually(t, func() bool { _, q := s.queue.counts(); return q == 1 }, 30*time.Second, time.Millisecond)
	code, b := get(t, base+"/health")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, string(b), `"queued":1`)

	code, _, body := post(t, base+"/v1/completions", `{"model":"`+tinyID+`","temperature":0,"prompt":"x","max_tokens":1}`)
	require.Equal(t, http.StatusTooManyRequests, code, "the line holds one: %s", body)

	// Wait in line for 20 heartbeats: far beyond both timeouts.
	for beats := 0; beats < 20; {
		ev, ok := next()
		require.True(t, ok)
		require.True(t, ev.comment, "nothing but heartbeats while waiting: %q", ev.data)
		beats++
	}
	cancel()

	data, _ := readAll(t, next)
	require.Equal(t, "[DONE]", data[len(data)-1])
	want, _ := direct(t, ids, 4, nil)
	var text string
	for _, d := range data[:len(data)-1] {
		var c Completion
		require.NoError(t, json.Unmarshal([]byte(d), &c))
		text += c.Choices[0].Text
	}
	require.Equal(t, tok.Decode(want), text)
	waitIdle(t, s)
}

// TestDisconnect: a client that goes away stops its generation at the next
// token (the emit callback returns the request's error and the engine
// stops), freeing the engine long before max_tokens.
func TestDisconnect(t *testing.T) {
	s, base := startServer(t, nil)
	t.Run("stream", func(t *testing.T) {
		cancel, _ := startLong(t, s, base)
		cancel()
		waitIdle(t, s)
		require.Zero(t, s.emitsAfterStop.Load(), "the engine went on after emit returned an error")
	})
	t.Run("non-streamed", func(t *testing.T) {
		before := s.generations.Load()
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/completions",
				strings.NewReader(`{"model":"`+tinyID+`","temperature":0,"prompt":"x","max_tokens":100000}`))
			if err != nil {
				done <- err
				return
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				resp.Body.Close()
			}
			done <- err
		}()
		require.Eventually(t, func() bool { return s.generations.Load() == before+1 }, 30*time.Second, time.Millisecond)
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
		waitIdle(t, s)
		require.Zero(t, s.emitsAfterStop.Load())
	})
	// The engine is free again and answers correctly.
	code, _, body := post(t, base+"/v1/completions", `{"model":"`+tinyID+`","temperature":0,"prompt":[1,2,3],"max_tokens":3}`)
	require.Equal(t, http.StatusOK, code, string(body))
	var got Completion
	require.NoError(t, json.Unmarshal(body, &got))
	want, _ := direct(t, []int{1, 2, 3}, 3, nil)
	_, tok := tiny(t)
	require.Equal(t, tok.Decode(want), got.Choices[0].Text)
}

func TestMemo(t *testing.T) {
	const req = `{"model":"` + tinyID + `","temperature":0,"messages":[{"role":"user","content":"Remember me"}],"max_tokens":6}`
	tests := []struct {
		name        string
		entries     int
		generations int64
	}{
		{"on", 32, 1},
		{"off", 0, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, base := startServer(t, func(o *Options) { o.MemoEntries = tc.entries })
			code, _, first := post(t, base+"/v1/chat/completions", req)
			require.Equal(t, http.StatusOK, code, string(first))
			code, _, second := post(t, base+"/v1/chat/completions", req)
			require.Equal(t, http.StatusOK, code, string(second))
			require.Equal(t, tc.generations, s.generations.Load())
			var a, b ChatCompletion
			require.NoError(t, json.Unmarshal(first, &a))
			require.NoError(t, json.Unmarshal(second, &b))
			require.NotEqual(t, a.ID, b.ID)
			require.Equal(t, a.Choices, b.Choices)
			require.Equal(t, a.Usage, b.Usage)
		})
	}

	t.Run("hit while busy, streamed", func(t *testing.T) {
		s, base := startServer(t, nil)
		code, _, first := post(t, base+"/v1/chat/completions", req)
		require.Equal(t, http.StatusOK, code)
		var a ChatCompletion
		require.NoError(t, json.Unmarshal(first, &a))

		cancel, _ := startLong(t, s, base)
		defer cancel()
		// Same engine input, so a memo hit although the engine is busy.
		resp, next := stream(t, t.Context(), base+"/v1/chat/completions",
			req[:len(req)-1]+`,"stream":true,"stream_options":{"include_usage":true}}`)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		data, _ := readAll(t, next)
		require.Equal(t, "[DONE]", data[len(data)-1])
		var reasoning, content, finish string
		var u *Usage
		for _, d := range data[:len(data)-1] {
			var c ChatChunk
			require.NoError(t, json.Unmarshal([]byte(d), &c))
			if c.Usage != nil {
				u = c.Usage
				continue
			}
			if r := c.Choices[0].Delta.ReasoningContent; r != nil {
				reasoning += *r
			}
			if x := c.Choices[0].Delta.Content; x != nil {
				content += *x
			}
			if f := c.Choices[0].FinishReason; f != nil {
				finish = *f
			}
		}
		require.Equal(t, a.Choices[0].FinishReason, finish)
		require.Equal(t, *a.Choices[0].Message.ReasoningContent+a.Choices[0].Message.Content, reasoning+content)
		require.Equal(t, a.Usage, *u)
		require.Equal(t, int64(2), s.generations.Load(), "the first request and the long one; not the hit")
	})
}

// TestHeartbeatWhileGenerating: comments interleave with the deltas while
// the model works, so a client's idle timer never fires between slow
// tokens (the interval is 10 s by default; here 1 ms).
func TestHeartbeatWhileGenerating(t *testing.T) {
	s, base := startServer(t, func(o *Options) { o.Heartbeat = time.Millisecond })
	cancel, next := startLong(t, s, base)
	defer cancel()
	comments, deltas := 0, 0
	for comments < 3 || deltas < 3 {
		ev, ok := next()
		require.True(t, ok, "the stream ended while generating")
		if ev.comment {
			require.Equal(t, ": keep-alive", ev.data)
			comments++
		} else if comments > 0 {
			deltas++ // a delta after a comment: they interleave
		}
	}
}
