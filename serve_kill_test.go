package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deltafin/deltafin/chat"
	"github.com/deltafin/deltafin/engine"
	"github.com/deltafin/deltafin/store"
	"github.com/deltafin/deltafin/tokenizer"
	"github.com/stretchr/testify/require"
)

// TestKill9BackgroundResponse serves k3-tiny with deltafin as a real
// process (the test binary runs as deltafin, process_test.go), starts a
// background response, kills the process with SIGKILL at seeded random
// moments while the job decodes, restarts it each time, and checks that the
// job finishes with exactly the tokens of an uninterrupted engine run:
// greedy (temperature 0), and sampled as the model card says with a seed
// (the stored seed keys the random stream by token position, so the
// resumed job continues it).
func TestKill9BackgroundResponse(t *testing.T) {
	t.Parallel()
	const modelDir, maxNew = "testdata/k3-tiny", 1200
	input := "Tell me everything."
	t.Run("greedy", func(t *testing.T) {
		t.Parallel()
		want := uninterrupted(t, modelDir, input, maxNew, engine.Sampling{})
		require.Greater(t, len(want), 200, "the reference answer is long enough to be killed in")
		kill9Resume(t, modelDir, fmt.Sprintf(`{"model":"k3-tiny","temperature":0,"input":%q,"max_output_tokens":%d,"background":true}`, input, maxNew), want)
	})
	t.Run("sampled", func(t *testing.T) {
		t.Parallel()
		// The first seed from 1 whose answer is long enough to be killed
		// in (an answer ends where the stream samples the end of turn).
		var want []int
		seed := uint64(0)
		for len(want) <= 200 {
			seed++
			want = uninterrupted(t, modelDir, input, maxNew, engine.Sampling{Temperature: 1, TopP: 0.95, Seed: seed})
		}
		kill9Resume(t, modelDir, fmt.Sprintf(`{"model":"k3-tiny","seed":%d,"input":%q,"max_output_tokens":%d,"background":true}`, seed, input, maxNew), want)
	})
}

// kill9Resume creates the background response body, kills the server
// three times while it decodes and checks its final tokens against want.
func kill9Resume(t *testing.T, modelDir, body string, want []int) {
	data := t.TempDir()
	base := startServing(t, modelDir, data)
	resp, err := http.Post(base.url+"/v1/responses", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	var created struct{ ID, Status string }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&created))
	resp.Body.Close()
	require.Equal(t, "queued", created.Status)

	rng := rand.New(rand.NewPCG(17, 9))
	killedAt := []int{}
	for range 3 {
		at := rng.IntN(len(want) / 4) // tokens decoded by this run before the kill
		start := base.tokens(t)
		require.Eventually(t, func() bool { return base.tokens(t) >= start+at || base.tokens(t) < 0 }, 2*time.Minute, time.Millisecond)
		if base.tokens(t) < 0 {
			break // finished before the kill point
		}
		base.kill(t)
		killedAt = append(killedAt, at)
		base = startServing(t, modelDir, data)
	}
	t.Logf("answer of %d tokens; killed after %v tokens of each run", len(want), killedAt)
	require.NotEmpty(t, killedAt)
	require.Eventually(t, func() bool { return base.tokens(t) < 0 }, 5*time.Minute, 10*time.Millisecond, "the job finishes")
	base.stop(t)

	st, err := store.Open(filepath.Join(data, store.FileName))
	require.NoError(t, err)
	defer st.Close()
	require.NoError(t, st.Check())
	j, toks, err := st.Get(created.ID)
	require.NoError(t, err)
	require.True(t, j.State.Finished(), "state %s", j.State)
	require.Equal(t, want, toks, "the resumed job's tokens are an uninterrupted run's")
}

// uninterrupted is the engine's answer to input as one chat turn.
func uninterrupted(t *testing.T, dir, input string, maxNew int, samp engine.Sampling) []int {
	t.Helper()
	m, err := engine.Open(t.Context(), dir, engine.Options{})
	require.NoError(t, err)
	defer m.Close()
	tok, err := tokenizer.Load(dir)
	require.NoError(t, err)
	segs, err := chat.Render([]chat.Message{{Role: "user", Content: input}}, chat.DefaultOptions())
	require.NoError(t, err)
	var toks []int
	_, err = m.NewSession().Generate(t.Context(), chat.Tokenize(tok, segs), engine.GenerateOptions{MaxNew: maxNew, StopTokens: chat.StopTokens(tok), Sampling: samp},
		func(id int) error { toks = append(toks, id); return nil })
	require.NoError(t, err)
	return toks
}

// serving is a deltafin serve process and its base URL.
type serving struct {
	d   *deltafin
	url string
}

// startServing runs `deltafin serve` on modelDir with data as its data
// directory, on a free port, and waits until it listens.
func startServing(t *testing.T, modelDir, data string) *serving {
	t.Helper()
	d := startDeltafin(t, map[string]string{"DELTAFIN_HOME": data, "DELTAFIN_KERNELS": "cpu"},
		"serve", "--model", modelDir, "--port", "0")
	m := d.waitLine(t, `msg=serving .*base_url=(http://127\.0\.0\.1:\d+)/v1`)
	// Keep reading its stderr, so a chatty run never blocks on a full pipe.
	go func() {
		for range d.lines {
		}
	}()
	return &serving{d: d, url: m[1]}
}

// tokens is the running job's token count from /health, or -1 when
// nothing runs or waits.
func (s *serving) tokens(t *testing.T) int {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/health", nil)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var h struct {
		Queue struct {
			Running *struct{ Tokens int }
			Queued  []any
		}
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&h))
	switch {
	case h.Queue.Running != nil:
		return h.Queue.Running.Tokens
	case len(h.Queue.Queued) > 0:
		return 0
	}
	return -1
}

// kill ends the server with SIGKILL (no chance to clean up) and waits.
func (s *serving) kill(t *testing.T) {
	require.NoError(t, s.d.cmd.Process.Signal(syscall.SIGKILL))
	<-s.d.done
}

// stop ends the server the polite way (SIGTERM) and waits.
func (s *serving) stop(t *testing.T) {
	require.NoError(t, s.d.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-s.d.done:
		require.NoError(t, err)
	case <-time.After(time.Minute):
		t.Fatal("deltafin serve did not stop on SIGTERM")
	}
}
