package server_test

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/engine"
	"github.com/deltafin/deltafin/server"
	"github.com/deltafin/deltafin/server/servertest"
	"github.com/deltafin/deltafin/tokenizer"
)

// These tests drive the server from outside, on the paced scripted K3
// (servertest), to read its queue between two tokens.

const pacedID = "deltafin-kimi-k3"

func pacedTokenizer(t *testing.T) *tokenizer.Tokenizer {
	t.Helper()
	tok, err := tokenizer.Load(filepath.Join("..", "testdata", "k3-tiny"))
	require.NoError(t, err)
	return tok
}

// servePaced serves a paced model emitting out on loopback.
func servePaced(t *testing.T, tok *tokenizer.Tokenizer, out []int) (*server.Server, string, *servertest.Paced) {
	t.Helper()
	m := servertest.NewPaced(engine.Info{ID: pacedID, VocabSize: tok.VocabSize(), ContextLen: 1 << 20}, out)
	s, base := servertest.Serve(t, m, tok)
	return s, base, m
}

// send posts body to url under ctx in the background and reports the
// status on the channel once the answer is read whole.
func send(t *testing.T, ctx context.Context, url, body string) <-chan int {
	codes := make(chan int, 1)
	go func() {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			t.Error(err)
			codes <- 0
			return
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("anthropic-version", "2023-06-01")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			codes <- 0
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		codes <- resp.StatusCode
	}()
	return codes
}

// TestQueueCountsThinking: on every endpoint that renders K3's chat
// template, the running job says it is thinking, with the tokens thought
// so far, until K3's end-of-thinking marker; then it answers and the count
// stays what was thought. A raw completion never thinks.
func TestQueueCountsThinking(t *testing.T) {
	t.Parallel()
	tok := pacedTokenizer(t)
	out, thought, answerAt := servertest.K3Turn(tok, "First I weigh the question carefully.", "Blue.")
	answer := tok.Encode("Blue.")
	for _, c := range []struct{ name, path, body string }{
		{"chat", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"Why is the sky blue?"}]}`},
		{"responses", "/v1/responses", `{"model":"m","input":"Why is the sky blue?"}`},
		{"messages", "/v1/messages", `{"model":"m","max_tokens":200,"messages":[{"role":"user","content":"Why is the sky blue?"}]}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s, base, m := servePaced(t, tok, out)
			done := send(t, t.Context(), base+c.path, c.body)
			for i := range answerAt + len(answer) {
				m.Advance(1)
				r := s.Queue().Running
				require.NotNil(t, r)
				require.Equal(t, i+1, r.Tokens)
				if i < thought {
					require.True(t, r.Thinking, "token %d is reasoning", i)
					require.Equal(t, i+1, r.ThinkingTokens)
				}
				if i >= answerAt {
					require.False(t, r.Thinking, "token %d is the answer", i)
					require.GreaterOrEqual(t, r.ThinkingTokens, thought)
					require.LessOrEqual(t, r.ThinkingTokens, answerAt, "the count stopped at the end of thinking")
				}
			}
			m.Advance(len(out) - answerAt - len(answer) - 1) // the stop token is not emitted
			require.Equal(t, http.StatusOK, <-done)
		})
	}
	t.Run("completion", func(t *testing.T) {
		t.Parallel()
		s, base, m := servePaced(t, tok, tok.Encode("Once upon a time"))
		done := send(t, t.Context(), base+"/v1/completions", `{"model":"m","prompt":"Tell me","max_tokens":2}`)
		for i := range 2 {
			m.Advance(1)
			r := s.Queue().Running
			require.False(t, r.Thinking, "token %d", i)
			require.Zero(t, r.ThinkingTokens)
		}
		require.Equal(t, http.StatusOK, <-done)
	})
}

// TestMessagesClientLeaves: the Messages API shares the queue's
// cancellation: a streamed answer whose client leaves stops at the engine
// and frees it, and a request waiting in line whose client leaves is
// dropped before it reaches the engine.
func TestMessagesClientLeaves(t *testing.T) {
	t.Parallel()
	tok := pacedTokenizer(t)
	s, base, m := servePaced(t, tok, tok.Encode("a long answer that goes on and on and on"))
	body := `{"model":"m","max_tokens":64,"stream":true,"thinking":{"type":"disabled"},"messages":[{"role":"user","content":"Talk"}]}`
	ctxA, leaveA := context.WithCancel(t.Context())
	a := send(t, ctxA, base+"/v1/messages", body)
	m.Advance(2)
	ctxB, leaveB := context.WithCancel(t.Context())
	b := send(t, ctxB, base+"/v1/messages", body)
	require.Eventually(t, func() bool { return len(s.Queue().Queued) == 1 }, time.Minute, time.Millisecond, "B waits in line")
	leaveB()
	<-b
	require.Eventually(t, func() bool { return len(s.Queue().Queued) == 0 }, time.Minute, time.Millisecond, "B is dropped from the line")
	require.Equal(t, 2, s.Queue().Running.Tokens, "A is at the engine")
	leaveA()
	<-a
	require.Eventually(t, func() bool { return s.Queue().Running == nil }, time.Minute, time.Millisecond, "A's leaving freed the engine")
	require.Equal(t, 1, m.Generations(), "B never reached the engine")
}
