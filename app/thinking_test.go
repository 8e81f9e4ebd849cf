package app

import (
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/engine"
	"github.com/deltafin/deltafin/server/servertest"
	"github.com/deltafin/deltafin/tokenizer"
)

// TestMenuSaysThinking: while a scripted K3 answer is in its think channel
// the menu's status line says "thinking… N tokens" with the server's count,
// beside "1 waiting, 1 ahead" for the request behind it; once K3 has ended
// its thinking the line counts the answer's tokens instead.
func TestMenuSaysThinking(t *testing.T) {
	tok, err := tokenizer.Load(filepath.Join("..", "testdata", "k3-tiny"))
	require.NoError(t, err)
	out, thought, answerAt := servertest.K3Turn(tok, "Light scatters off the air.", "Rayleigh scattering.")
	m := servertest.NewPaced(engine.Info{ID: "deltafin-kimi-k3", VocabSize: tok.VocabSize(), ContextLen: 1 << 20}, out)
	srv, base := servertest.Serve(t, m, tok)
	ask := func(q string) {
		go func() {
			resp, err := http.Post(base+"/v1/chat/completions", "application/json",
				strings.NewReader(`{"model":"deltafin-kimi-k3","messages":[{"role":"user","content":"`+q+`"}]}`))
			if err == nil {
				resp.Body.Close()
			}
		}()
	}
	ask("Why is the sky blue?")
	m.Advance(1)
	ask("And the sunset?")
	require.Eventually(t, func() bool { return len(srv.Queue().Queued) == 1 }, time.Minute, time.Millisecond, "the second waits")
	line := func() string {
		return BuildMenu(State{Install: InstallState{Mode: InstallFull}, Answering: answeringOf(srv.Queue())}).Item(ItemStatus).Label
	}
	require.Equal(t, "Full install · Answering… “Why is the sky blue?” · thinking… 1 token · 1 waiting, 1 ahead", line())
	m.Advance(thought - 1)
	require.Contains(t, line(), "· thinking… "+strconv.Itoa(thought)+" tokens · 1 waiting, 1 ahead")
	m.Advance(answerAt + 2 - thought)
	require.Contains(t, line(), "· "+strconv.Itoa(answerAt+2)+" tokens · 1 waiting, 1 ahead", "the answer, no longer thinking")
	require.NotContains(t, line(), "thinking")
	go m.Run(t.Context()) // the rest of both answers
	require.Eventually(t, func() bool { q := srv.Queue(); return q.Running == nil && len(q.Queued) == 0 }, time.Minute, time.Millisecond)
}
