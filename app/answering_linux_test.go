package app

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"log/slog"

	"github.com/deltafin/deltafin/engine"
	"github.com/deltafin/deltafin/server"
	"github.com/stretchr/testify/require"
)

// TestBackgroundAnswerAcrossQuit: two background responses on the demo
// server show as "Answering… “Tell me everything.” … 1 waiting, 1 ahead" in
// the menu, the running one by its first words (the first runs until
// cancelled); the app quits while they run and asks nothing; the next
// launch resumes both, and once the first is cancelled the second's end
// sends the long-answer notification with its first words.
func TestBackgroundAnswerAcrossQuit(t *testing.T) {
	desk.reset()
	cfg := testConfig(t)
	cfg.NotifyAfter = time.Nanosecond
	deps := func() Deps {
		mi := newMirrorInstall(cfg)
		return Deps{Downloader: mi, Notifier: NewNotifier(),
			Server: &apiServer{cfg: cfg, mi: mi, demo: os.DirFS("../testdata/k3-tiny"), log: slog.Default(), model: endless}}
	}
	a := New(cfg, deps(), nil)
	require.NoError(t, a.Start(t.Context()))
	st := waitFor(t, a, "serving", func(s State) bool { return s.ServerAddr != "" || s.Problem != "" })
	require.Empty(t, st.Problem)
	var ids []string
	for i, input := range []string{"Tell me everything.", "And more."} {
		// The real demo model without its stop tokens (endless): the first
		// runs until cancelled, the second to its 300 tokens.
		body := fmt.Sprintf(`{"model":"deltafin-demo","temperature":0,"input":%q,"max_output_tokens":%d,"background":true}`, input, []int{1 << 20, 300}[i])
		resp, err := http.Post(st.ServerAddr+"/v1/responses", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		var r struct{ ID string }
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&r))
		resp.Body.Close()
		ids = append(ids, r.ID)
	}
	st = waitFor(t, a, "answering", func(s State) bool { return s.Answering.Running && s.Answering.Queued == 1 })
	label := BuildMenu(st).Items[ItemStatus].Label
	require.Contains(t, label, "Answering… “Tell me everything.”")
	require.Contains(t, label, "1 waiting, 1 ahead")
	require.NotContains(t, label, "resp_")
	require.Equal(t, "answering…", BuildMenu(st).Title)
	require.NoError(t, a.Close(context.Background()), "quitting while a job runs")

	a = startApp(t, cfg, deps())
	st = waitFor(t, a, "serving again", func(s State) bool { return s.ServerAddr != "" })
	status := func(id string) string {
		resp, err := http.Get(st.ServerAddr + "/v1/responses/" + id)
		require.NoError(t, err)
		defer resp.Body.Close()
		var r struct{ Status string }
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&r))
		return r.Status
	}
	require.Eventually(t, func() bool { return status(ids[0]) == "in_progress" }, 2*time.Minute, 10*time.Millisecond, "the first resumed")
	resp, err := http.Post(st.ServerAddr+"/v1/responses/"+ids[0]+"/cancel", "application/json", nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "cancelled", status(ids[0]))
	require.Eventually(t, func() bool { s := status(ids[1]); return s == "completed" || s == "incomplete" },
		2*time.Minute, 10*time.Millisecond, "the second resumed and finished")
	n := desk.waitNotification(t, "Answer finished")
	require.True(t, strings.HasPrefix(n.Summary, "Answer finished after"), n.Summary)
	require.NotEmpty(t, n.Body, "the first words of the answer")
}

// endless is the engine as the server sees it, its turns never ended by a
// stop token: the random demo model's greedy answer does reach one, after a
// number of tokens that depends on the CPU's rounding and on where a quit
// cut the answer (a resumed answer is prefilled in one batch, not decoded
// token by token).
func endless(m server.Model) server.Model { return endlessModel{m} }

type endlessModel struct{ server.Model }

func (m endlessModel) NewSession() server.Session { return endlessSession{m.Model.NewSession()} }

type endlessSession struct{ server.Session }

func (s endlessSession) Generate(ctx context.Context, prompt []int, opts engine.GenerateOptions, emit func(int) error) (engine.Result, error) {
	opts.StopTokens = nil
	return s.Session.Generate(ctx, prompt, opts, emit)
}
