package server

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSSEHeartbeatAndEvents(t *testing.T) {
	sawBeats := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := startSSE(w, 20*time.Millisecond)
		defer s.close()
		if err := s.event(map[string]int{"n": 1}); err != nil {
			t.Error(err) // not require: this is the handler's goroutine
		}
		// Stay silent, as a model in a long prefill does, until the client
		// has seen heartbeats.
		select {
		case <-sawBeats:
		case <-time.After(30 * time.Second):
		}
		if err := s.event(map[string]int{"n": 2}); err != nil {
			t.Error(err)
		}
		if err := s.finish(); err != nil {
			t.Error(err)
		}
	}))
	defer srv.Close()

	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	require.Equal(t, "no-cache", resp.Header.Get("Cache-Control"))

	var data []string
	beats := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
		case strings.HasPrefix(line, ":"):
			beats++
			if beats == 3 {
				close(sawBeats)
			}
		case strings.HasPrefix(line, "data: "):
			data = append(data, strings.TrimPrefix(line, "data: "))
		default:
			t.Fatalf("unexpected line %q", line)
		}
	}
	require.NoError(t, sc.Err())
	require.GreaterOrEqual(t, beats, 3)
	require.Equal(t, []string{`{"n":1}`, `{"n":2}`, `[DONE]`}, data)
}

func TestSSEWriteErrorSticks(t *testing.T) {
	result := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := startSSE(w, time.Hour)
		defer s.close()
		<-r.Context().Done() // the client hung up
		deadline := time.Now().Add(20 * time.Second)
		var err error
		for err == nil && time.Now().Before(deadline) {
			err = s.event(map[string]string{"pad": strings.Repeat("x", 4096)})
		}
		if err != nil {
			// Sticky: later writes fail the same way without touching the conn.
			if again := s.event(1); again != err {
				err = again
			}
		}
		result <- err
	}))
	defer srv.Close()

	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, resp.Body.Close())
	select {
	case err := <-result:
		require.Error(t, err)
		require.Contains(t, err.Error(), "event stream")
	case <-time.After(30 * time.Second):
		t.Fatal("handler never noticed the client left")
	}
}
