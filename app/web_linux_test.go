package app

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/web"
)

// pagePost clicks a /model button the way the page does: with its
// same-origin token.
func pagePost(t *testing.T, base, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(base + "/")
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	_, rest, ok := strings.Cut(string(b), `name="deltafin-token" content="`)
	require.True(t, ok)
	tok, _, _ := strings.Cut(rest, `"`)
	req, err := http.NewRequest(http.MethodPost, base+path, nil)
	require.NoError(t, err)
	req.Header.Set("X-Deltafin-Token", tok)
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(b)
}

// The page's Pause, Resume and Warm buttons are the menu's entries: they
// pause and resume a real download (from the fake hub) and switch warming
// on, and refuse what does not apply.
func TestPageButtons(t *testing.T) {
	desk.reset()
	hub := newGatedHub(t)
	cfg := hubAppConfig(t, hub.Hub)
	a := startApp(t, cfg, testDeps(cfg, t.TempDir()))
	st := waitFor(t, a, "demo server", func(s State) bool { return s.Demo && s.ServerAddr != "" })
	code, body := pagePost(t, st.ServerAddr, "/api/model/"+web.ActPause)
	require.Equal(t, http.StatusConflict, code, "nothing to pause: %s", body)

	hub.hold(4*2 + 12)
	clickDownload(t, a, ItemDownloadStream)
	waitFor(t, a, "progress", func(s State) bool { return s.Downloading && s.Download.Done > 0 })
	require.True(t, a.Status().CanPause)
	code, body = pagePost(t, st.ServerAddr, "/api/model/"+web.ActPause)
	require.Equal(t, http.StatusOK, code, body)
	waitFor(t, a, "paused", func(s State) bool { return !s.Downloading && s.Pending == ModeStream })
	require.Equal(t, LabelResume, a.Menu().Item(ItemPause).Label, "the menu says what the page did")
	require.True(t, a.Status().Paused)

	hub.release()
	code, body = pagePost(t, st.ServerAddr, "/api/model/"+web.ActResume)
	require.Equal(t, http.StatusOK, code, body)
	st = waitFor(t, a, "stream install served", func(s State) bool {
		return s.Install.Mode == InstallStream && !s.Downloading && !s.Demo && s.ServerAddr != ""
	})
	s := a.Status()
	require.Equal(t, "stream", s.Install)
	require.True(t, s.CanUpgrade)
	require.True(t, s.CanWarm)
	code, body = pagePost(t, st.ServerAddr, "/api/model/"+web.ActWarmOn)
	require.Equal(t, http.StatusOK, code, "the page's token outlives the server's restart: %s", body)
	waitFor(t, a, "warming on", func(s State) bool { return s.WarmEnabled })
	require.True(t, a.Menu().Item(ItemWarm).Checked)
	code, _ = pagePost(t, st.ServerAddr, "/api/model/sideways")
	require.Equal(t, http.StatusNotFound, code)
}

// Settings saved on the page come back at the next launch, except those a
// flag sets.
func TestRememberedSettings(t *testing.T) {
	cfg := testConfig(t)
	a := startApp(t, cfg, Deps{})
	note, err := a.SaveSettings(web.Settings{Port: 8123, APIKey: "k", CORSOrigins: []string{"http://localhost:3000"}, Queue: 3,
		WarmIdleMinutes: 5, NotifyAfterSeconds: 120})
	require.NoError(t, err)
	require.Contains(t, note, "next start")
	require.Equal(t, 2*time.Minute, a.live().NotifyAfter, "in force at once")
	_, err = a.SaveSettings(web.Settings{Port: 0})
	require.ErrorContains(t, err, "port")
	_, err = a.SaveSettings(web.Settings{Port: 1, CORSOrigins: []string{"localhost"}})
	require.ErrorContains(t, err, "CORS origin")

	next := testConfig(t)
	next.DataDir = cfg.DataDir
	require.NoError(t, RememberedAddress(&next))
	require.NoError(t, RememberedSettings(&next, func(flag string) bool { return flag == "queue" }))
	require.Equal(t, 8123, next.Server.Port)
	require.Equal(t, "k", next.Server.APIKey)
	require.Equal(t, []string{"http://localhost:3000"}, next.Server.CORSOrigins)
	require.Equal(t, 32, next.Server.Queue, "a flag beats the saved value")
	require.Equal(t, 5*time.Minute, next.WarmIdleAfter)
	require.Equal(t, 2*time.Minute, next.NotifyAfter)
}
