package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/require"
)

// SIGTERM while a non-streamed request runs and another waits in the
// queue: both get 503 with Retry-After and an error body (an empty 200
// made OpenAI's SDKs fail to parse the answer), the SDK reports an API
// error, and a streamed Responses request waiting in line ends with an
// error event, as chat's stream does. The running request is a greedy
// completion k3-tiny repeats to its cap: a sampled chat answer with a
// random seed could end in a few tokens, before the other two were in
// line, and the test failed on a loaded machine.
func TestSIGTERMAnswers503(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	s := startServing(t, "testdata/k3-tiny", data)
	type answer struct {
		code  int
		retry string
		body  []byte
		err   error
	}
	running := make(chan answer, 1)
	go func() {
		body := `{"model":"k3-tiny","temperature":0,"prompt":"1, 2, 3,","max_tokens":100000}`
		resp, err := http.Post(s.url+"/v1/completions", "application/json", strings.NewReader(body))
		if err != nil {
			running <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		running <- answer{code: resp.StatusCode, retry: resp.Header.Get("Retry-After"), body: b, err: err}
	}()
	require.Eventually(t, func() bool { return s.tokens(t) > 0 }, 2*time.Minute, 5*time.Millisecond, "the first request runs")

	queued := make(chan error, 1)
	go func() {
		client := openai.NewClient(option.WithBaseURL(s.url+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
		_, err := client.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: "k3-tiny",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")}})
		queued <- err
	}()
	events := make(chan []string, 1)
	go func() {
		body := `{"model":"k3-tiny","input":"Hi","stream":true}`
		resp, err := http.Post(s.url+"/v1/responses", "application/json", strings.NewReader(body))
		if err != nil {
			events <- []string{err.Error()}
			return
		}
		defer resp.Body.Close()
		var evs []string
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				evs = append(evs, d)
			}
		}
		events <- evs
	}()
	require.Eventually(t, func() bool { return s.queued(t) == 2 }, time.Minute, 5*time.Millisecond, "two requests wait")
	require.Greater(t, s.tokens(t), 0, "the first request still runs")

	require.NoError(t, s.d.cmd.Process.Signal(syscall.SIGTERM))

	a := <-running
	require.NoError(t, a.err)
	require.Equal(t, http.StatusServiceUnavailable, a.code, "the running request: %s", a.body)
	require.NotEmpty(t, a.retry, "Retry-After")
	var e struct {
		Error struct{ Message, Type, Code string }
	}
	require.NoError(t, json.Unmarshal(a.body, &e), string(a.body))
	require.Equal(t, "server_shutting_down", e.Error.Code)
	require.Contains(t, e.Error.Message, "shutting down")

	err := <-queued
	var apiErr *openai.Error
	require.True(t, errors.As(err, &apiErr), "the SDK reports an API error, not a parse failure: %v", err)
	require.Equal(t, http.StatusServiceUnavailable, apiErr.StatusCode)
	require.Equal(t, "server_shutting_down", apiErr.Code)

	evs := <-events
	require.NotEmpty(t, evs)
	var last struct{ Type, Code string }
	require.NoError(t, json.Unmarshal([]byte(evs[len(evs)-1]), &last), fmt.Sprint(evs))
	require.Equal(t, "error", last.Type, "the stream ends with an error event: %v", evs)
	require.Equal(t, "server_shutting_down", last.Code)

	code, _ := s.d.exit(t)
	require.Equal(t, 0, code, "a SIGTERM is a clean stop")
}

// queued is how many requests wait in the server's line (/health).
func (s *serving) queued(t *testing.T) int {
	t.Helper()
	resp, err := http.Get(s.url + "/health")
	require.NoError(t, err)
	defer resp.Body.Close()
	var h struct{ Queued int }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&h))
	return h.Queued
}
