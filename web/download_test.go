package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/app"
	"github.com/deltafin/deltafin/downloader/hubtest"
	"github.com/deltafin/deltafin/internal/usertext"
	"github.com/deltafin/deltafin/web"
)

// trickle makes the fake hub's CDN answer each bulk range a piece at a
// time, every piece on the test's word (allow) or all at once after open:
// the download is then under way for as long as the test wants, its bytes
// real, without timing it.
type trickle struct {
	permits chan struct{}
	sent    chan struct{} // one per piece written
	opened  chan struct{}
	once    sync.Once
}

const (
	tricklePiece = 32 << 10
	trickleOver  = 128 << 10 // ranges up to this (shard headers) pass at once
)

func newTrickle(t *testing.T, h *hubtest.Hub) *trickle {
	tr := &trickle{permits: make(chan struct{}, 1024), sent: make(chan struct{}, 1<<12), opened: make(chan struct{})}
	h.SetFault(func(w http.ResponseWriter, r *http.Request, f *hubtest.File, start, end int64) bool {
		if end-start <= trickleOver {
			return false
		}
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, end-1, len(f.Data)))
		w.Header().Set("Content-Length", strconv.FormatInt(end-start, 10))
		w.WriteHeader(http.StatusPartialContent)
		for off := start; off < end; off += tricklePiece {
			select {
			case <-tr.permits:
			case <-tr.opened:
			case <-r.Context().Done():
				return true
			}
			w.Write(f.Data[off:min(off+tricklePiece, end)])
			w.(http.Flusher).Flush()
			tr.sent <- struct{}{}
		}
		return true
	})
	t.Cleanup(tr.open)
	return tr
}

func (tr *trickle) open() { tr.once.Do(func() { close(tr.opened) }) }

// untilRate lets the download through a piece at a time, each followed by
// the page's next sample (a second or more later), until the page's
// download text shows a measured rate and a time left; before that it
// must show no time left.
func (tr *trickle) untilRate(t *testing.T, ctx context.Context, text func() string) {
	t.Helper()
	for range 24 {
		if s := text(); !strings.Contains(s, "/s") {
			require.NotContains(t, s, "left", "a time left needs a measured rate")
		}
		points := eval[int](t, ctx, `Number(document.querySelector("#graph").dataset.points)`)
		tr.permits <- struct{}{}
		<-tr.sent
		until(t, ctx, "the next sample", `Number(document.querySelector("#graph").dataset.points) > `+strconv.Itoa(points))
		if s := text(); strings.Contains(s, "/s") && strings.Contains(s, "left") {
			return
		}
	}
	require.Fail(t, "a rate and a time left once bytes flowed for a while", "%q", text())
}

// TestModelPageDownloads: on an empty data directory /model offers the
// menu's two downloads; Download (stream) shows the disk check's figures
// and starts the app's downloader against the fake hub; the page then
// shows the share, the rate measured over the bytes received and the time
// left at it (none before a rate is measured), the same after a reload,
// and the stream install once it is done.
func TestModelPageDownloads(t *testing.T) {
	t.Parallel()
	hub := hubtest.New(t, tinyDir)
	tr := newTrickle(t, hub)
	a, base, _ := startAppEnv(t, t.TempDir(), map[string]string{"HF_ENDPOINT": hub.URL() + "/"},
		func(c *app.Config) { c.Jobs, c.KeepFreeGB = 1, 0.001 })
	ctx := tab(t)
	do(t, ctx, chromedp.Navigate(base+"/model"))
	until(t, ctx, "the offer", `document.querySelector("#line").textContent.startsWith("Not installed") && !document.querySelector("#download-buttons").hidden && !document.querySelector("#dl-stream").disabled && !document.querySelector("#dl-full").disabled`)
	require.True(t, eval[bool](t, ctx, `document.querySelector("#act-pause").disabled`), "nothing to pause yet")

	do(t, ctx, chromedp.Click(chromedp.CSS("#dl-stream")))
	until(t, ctx, "the disk check", `!document.querySelector("#dl-confirm").hidden && !document.querySelector("#dl-start").disabled`)
	require.Regexp(t, `^Kimi K3 in stream mode: the spine now \(the experts come on demand\), [0-9.]+ [kMG]?B to download( \([0-9.]+ [kMG]?B already here\))?\. Free disk: [0-9.]+ [kMGTPE]?B; [0-9.]+ [kMGTPE]?B stay free afterwards\.$`,
		eval[string](t, ctx, `document.querySelector("#dl-confirm-text").textContent`))
	require.False(t, a.State().Downloading, "nothing starts before Download is clicked")
	shot(t, ctx, "model-download-confirm")
	do(t, ctx, chromedp.Click(chromedp.CSS("#dl-start")))
	until(t, ctx, "downloading", `document.querySelector("#line").textContent.startsWith("Downloading") && document.querySelector("#dl-confirm").hidden && document.querySelector("#download-buttons").hidden && !document.querySelector("#act-pause").disabled`)
	require.True(t, a.State().Downloading)
	require.Equal(t, app.ModeStream, a.State().Pending)

	text := func() string { return eval[string](t, ctx, `document.querySelector("#download-text").textContent`) }
	if s := text(); !strings.Contains(s, "/s") && strings.Contains(s, "%") {
		require.Contains(t, s, "measuring the rate…")
	}
	tr.untilRate(t, ctx, text)
	line := `^\d+% · [0-9.]+ [kMG]?B/s · \d+ (s|min|h) left$`
	require.Regexp(t, line, text())
	st := a.Status()
	require.Positive(t, st.Download.Rate)
	require.Positive(t, st.Download.ETASeconds)
	require.Contains(t, eval[string](t, ctx, `document.querySelector("#line").textContent`), "/s · ", "the menu's status line says the rate too")
	shot(t, ctx, "model-downloading")

	// A reload finds the download where it is: the app holds it.
	do(t, ctx, chromedp.Reload())
	until(t, ctx, "the download after a reload", `/^\d+% · /.test(document.querySelector("#download-text").textContent) && !document.querySelector("#act-pause").disabled && document.querySelector("#download-buttons").hidden`)
	require.Regexp(t, line, text())

	tr.open()
	// The app then serves the installed model instead of the demo, on
	// another port here (the test asked for any free one).
	for st := a.State(); st.Downloading || st.Demo || st.ServerAddr == ""; st = a.State() {
		<-a.Changed()
	}
	do(t, ctx, chromedp.Navigate(a.State().ServerAddr+"/model"))
	until(t, ctx, "the stream install", `document.querySelector("#line").textContent.startsWith("Stream install")`)
	require.True(t, eval[bool](t, ctx, `document.querySelector("#download-buttons").hidden`), "nothing more to download but the upgrade")
	until(t, ctx, "Upgrade offered", `!document.querySelector("#act-upgrade").disabled`)
	shot(t, ctx, "model-stream-installed")
}

// TestModelPageUnderServe: deltafin serve's page cannot download (no app
// runs the downloader): the buttons are off, the page says what to run
// instead, and the API says it whole, without a package prefix.
func TestModelPageUnderServe(t *testing.T) {
	t.Parallel()
	s := serve(t, "")
	ctx := tab(t)
	do(t, ctx, chromedp.Navigate(s.base+"/model"))
	until(t, ctx, "the status line", `document.querySelector("#line").textContent.includes("demo model")`)
	for _, id := range []string{"dl-stream", "dl-full", "act-pause", "act-upgrade"} {
		require.True(t, eval[bool](t, ctx, `document.getElementById("`+id+`").disabled`), id)
	}
	require.Contains(t, eval[string](t, ctx, `document.querySelector("#no-app").textContent`), "deltafin setup --stream")
	shot(t, ctx, "model-serve")
	token := eval[string](t, ctx, `document.querySelector('meta[name="deltafin-token"]').content`)
	for _, path := range []string{"/api/model/check/stream", "/api/model/" + web.ActDownloadStream} {
		code, body := call(t, http.MethodPost, s.base+path, "", "X-Deltafin-Token", token, "Origin", s.base)
		require.Equal(t, http.StatusNotImplemented, code, body)
		require.Contains(t, body, web.NoApp)
	}
}

// TestModelActionsSayWhyWithoutPrefix: a /model action that does not
// apply now answers why, in words, without the app's package prefix.
func TestModelActionsSayWhyWithoutPrefix(t *testing.T) {
	t.Parallel()
	_, base, _ := startApp(t, t.TempDir())
	ctx := tab(t)
	do(t, ctx, chromedp.Navigate(base+"/model"))
	until(t, ctx, "the status line", `document.querySelector("#line").textContent.includes("demo model")`)
	token := eval[string](t, ctx, `document.querySelector('meta[name="deltafin-token"]').content`)
	for path, want := range map[string]string{
		"/api/model/" + web.ActPause: "not now: pause does not apply (Not installed",
		"/api/model/check/bogus":     `not now: no download mode "bogus" (stream or full)`,
	} {
		code, body := call(t, http.MethodPost, base+path, "", "X-Deltafin-Token", token, "Origin", base)
		require.Equal(t, http.StatusConflict, code, body)
		var e struct{ Error struct{ Message string } }
		require.NoError(t, json.Unmarshal([]byte(body), &e))
		require.True(t, strings.HasPrefix(e.Error.Message, want), e.Error.Message)
		require.False(t, usertext.Prefixed(e.Error.Message), e.Error.Message)
	}
}

// TestModelPageDownloadsFull: Download (full) on /model checks the disk
// for every weight, starts the app's full download (a measured rate and a
// time left while it runs, as for stream) and ends in a full install, with
// nothing more offered.
func TestModelPageDownloadsFull(t *testing.T) {
	t.Parallel()
	hub := hubtest.New(t, tinyDir)
	tr := newTrickle(t, hub)
	a, base, _ := startAppEnv(t, t.TempDir(), map[string]string{"HF_ENDPOINT": hub.URL() + "/"},
		func(c *app.Config) { c.Jobs, c.KeepFreeGB = 1, 0.001 })
	ctx := tab(t)
	do(t, ctx, chromedp.Navigate(base+"/model"))
	until(t, ctx, "the offer", `!document.querySelector("#download-buttons").hidden && !document.querySelector("#dl-full").disabled`)
	do(t, ctx, chromedp.Click(chromedp.CSS("#dl-full")))
	until(t, ctx, "the disk check", `!document.querySelector("#dl-confirm").hidden && !document.querySelector("#dl-start").disabled`)
	require.Regexp(t, `^Kimi K3 in full mode: every weight, [0-9.]+ [kMG]?B to download( \([0-9.]+ [kMG]?B already here\))?\. Free disk: [0-9.]+ [kMGTPE]?B; [0-9.]+ [kMGTPE]?B stay free afterwards\.$`,
		eval[string](t, ctx, `document.querySelector("#dl-confirm-text").textContent`))
	require.False(t, a.State().Downloading, "nothing starts before Download is clicked")
	do(t, ctx, chromedp.Click(chromedp.CSS("#dl-start")))
	until(t, ctx, "downloading", `document.querySelector("#line").textContent.startsWith("Downloading") && document.querySelector("#download-buttons").hidden`)
	require.Equal(t, app.ModeFull, a.State().Pending)

	text := func() string { return eval[string](t, ctx, `document.querySelector("#download-text").textContent`) }
	tr.untilRate(t, ctx, text)
	require.Regexp(t, `^\d+% · [0-9.]+ [kMG]?B/s · \d+ (s|min|h) left$`, text())
	shot(t, ctx, "model-downloading-full")

	tr.open()
	for st := a.State(); st.Downloading || st.Demo || st.ServerAddr == ""; st = a.State() {
		<-a.Changed()
	}
	do(t, ctx, chromedp.Navigate(a.State().ServerAddr+"/model"))
	until(t, ctx, "the full install", `document.querySelector("#line").textContent.startsWith("Full install")`)
	require.True(t, eval[bool](t, ctx, `document.querySelector("#download-buttons").hidden`), "nothing more to download")
	require.True(t, eval[bool](t, ctx, `document.querySelector("#act-upgrade").disabled`), "no upgrade past a full install")
	shot(t, ctx, "model-full-installed")
}
