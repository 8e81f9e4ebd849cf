package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/deltafin/deltafin/chat"
	"github.com/stretchr/testify/require"
)

func chatBody(content string) string {
	return fmt.Sprintf(`{"model":%q,"temperature":0,"messages":[{"role":"user","content":%q}],"max_tokens":3}`, tinyID, content)
}

// TestThreeChatsWaitInOrder: with the default options three concurrent
// chat requests all succeed, none gets 429, and they reach the engine in
// the order they arrived. The scripted model says when each generation
// starts and runs it only on the test's word, so the order is shown by
// events, not timing.
func TestThreeChatsWaitInOrder(t *testing.T) {
	t.Parallel()
	_, tok := tiny(t)
	m := newScripted(tok.Encode("fine thanks")...)
	s, base := startServerWith(t, m, func(o *Options) { o.MemoEntries = 0 })
	names := []string{"first", "second", "third"}
	codes := make(chan int, 3)
	var prompts [][]int
	for i, name := range names {
		go func() {
			code, _, body := post(t, base+"/v1/chat/completions", chatBody(name))
			if code != http.StatusOK {
				t.Errorf("%s: %d %s", name, code, body)
			}
			codes <- code
		}()
		if i == 0 {
			prompts = append(prompts, <-m.started) // the first is at the engine
			continue
		}
		// The next one is sent only once this one waits in line.
		require.Eventually(t, func() bool { _, q := s.queue.counts(); return q == i }, waitLong, pollEvery)
	}
	qs := s.Queue()
	require.Equal(t, "prefilling", qs.Running.State)
	require.Len(t, qs.Queued, 2)

	for range names {
		m.proceed <- struct{}{}
		if len(prompts) < len(names) {
			prompts = append(prompts, <-m.started)
		}
	}
	for range names {
		require.Equal(t, http.StatusOK, <-codes)
	}
	for i, p := range prompts {
		want := chat.Tokenize(tok, mustRender(t, names[i]))
		require.True(t, slices.Equal(want, p), "generation %d ran %q's prompt", i, tok.Decode(p))
	}
}

func mustRender(t *testing.T, content string) []chat.Segment {
	t.Helper()
	segs, err := chat.Render([]chat.Message{{Role: "user", Content: content}}, chat.DefaultOptions())
	require.NoError(t, err)
	return segs
}

// TestThreeChatsRealEngine: the same three requests on k3-tiny, default
// options: all answered, each exactly as a direct engine run.
func TestThreeChatsRealEngine(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, func(o *Options) { o.MemoEntries = 0 })
	_, tok := tiny(t)
	type answer struct {
		name string
		code int
		body []byte
	}
	answers := make(chan answer, 3)
	for _, name := range []string{"first", "second", "third"} {
		go func() {
			code, _, body := post(t, base+"/v1/chat/completions", chatBody(name))
			answers <- answer{name, code, body}
		}()
	}
	for range 3 {
		a := <-answers
		require.Equal(t, http.StatusOK, a.code, "%s: %s", a.name, a.body)
		var got ChatCompletion
		require.NoError(t, json.Unmarshal(a.body, &got))
		want, _ := direct(t, chat.Tokenize(tok, mustRender(t, a.name)), 3, chat.StopTokens(tok))
		require.Equal(t, len(want), got.Usage.CompletionTokens, a.name)
	}
}
