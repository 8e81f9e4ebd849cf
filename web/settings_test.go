package web_test

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/deltafin/deltafin/web"
	"github.com/stretchr/testify/require"
)

// Settings saved on the page are in force, and still there after the app
// restarts.
func TestSettingsPersist(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, base, stop := startApp(t, dir)
	ctx := tab(t)
	do(t, ctx, chromedp.Navigate(base+"/settings"))
	until(t, ctx, "the settings", `document.querySelector("#s-port").value !== ""`)
	require.Equal(t, base+"/v1", eval[string](t, ctx, `document.querySelector("#base-url").textContent`))
	require.Contains(t, eval[string](t, ctx, `document.querySelector("#ex-0").textContent`), "curl "+base+"/v1/chat/completions")
	require.Contains(t, eval[string](t, ctx, `document.querySelector("#ex-1").textContent`), `base_url="`+base+`/v1"`)
	require.Contains(t, eval[string](t, ctx, `document.querySelector("#ex-2").textContent`), `baseURL: "`+base+`/v1"`)
	shot(t, ctx, "settings")

	do(t, ctx, chromedp.SetValue(chromedp.CSS("#s-queue"), "7"),
		chromedp.SetValue(chromedp.CSS("#s-notify"), "90"),
		chromedp.SetValue(chromedp.CSS("#s-idle"), "25"),
		chromedp.SetValue(chromedp.CSS("#s-cors"), "http://localhost:5173"),
		chromedp.Click(chromedp.CSS("#s-save")))
	until(t, ctx, "saved", `!document.querySelector("#s-note").hidden`)
	require.Contains(t, eval[string](t, ctx, `document.querySelector("#s-note").textContent`), "restarts")
	// The server restarts with the new queue depth.
	require.Eventually(t, func() bool {
		resp, err := http.Get(base + "/health")
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return strings.Contains(string(b), `"depth":7`)
	}, 30*time.Second, 10*time.Millisecond)

	// A bad value is refused with the reason.
	do(t, ctx, chromedp.SetValue(chromedp.CSS("#s-cors"), "not an origin"), chromedp.Click(chromedp.CSS("#s-save")))
	until(t, ctx, "refused", `!document.querySelector("#s-error").hidden`)
	require.Contains(t, eval[string](t, ctx, `document.querySelector("#s-error").textContent`), "CORS origin")

	// Restart: the app reads them back from its state file, on the same
	// port, and the server runs with them.
	stop()
	require.FileExists(t, filepath.Join(dir, "app-state.json"))
	_, base2, _ := startApp(t, dir)
	require.Equal(t, base, base2, "the port taken is kept")
	do(t, ctx, chromedp.Navigate(base2+"/settings"))
	until(t, ctx, "the settings", `document.querySelector("#s-port").value !== ""`)
	require.Equal(t, "7", eval[string](t, ctx, `document.querySelector("#s-queue").value`))
	require.Equal(t, "90", eval[string](t, ctx, `document.querySelector("#s-notify").value`))
	require.Equal(t, "25", eval[string](t, ctx, `document.querySelector("#s-idle").value`))
	require.Equal(t, "http://localhost:5173", eval[string](t, ctx, `document.querySelector("#s-cors").value`))
	code, body := call(t, http.MethodGet, base2+"/health", "")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `"depth":7`, "the queue depth is in force")
	code, _ = call(t, http.MethodOptions, base2+"/v1/chat/completions", "", "Origin", "http://localhost:5173", "Access-Control-Request-Method", "POST")
	require.Less(t, code, 300, "the CORS origin is in force")
}

// TestSettingsUnderServe: under deltafin serve (no app behind the page)
// /settings lists the flags in force, read-only: no form to save.
func TestSettingsUnderServe(t *testing.T) {
	t.Parallel()
	flags := []web.Flag{{Name: "--data-dir", Value: "/data/deltafin"}, {Name: "--api-key", Value: "not set"}, {Name: "--queue", Value: "7"}}
	s := serveWith(t, "", t.TempDir(), flags)
	ctx := tab(t)
	do(t, ctx, chromedp.Navigate(s.base+"/settings"))
	until(t, ctx, "the flags", `document.querySelectorAll("#flags tr").length === 3`)
	rows := eval[[]string](t, ctx, `[...document.querySelectorAll("#flags tr")].map(r => r.cells[0].textContent + "=" + r.cells[1].textContent)`)
	require.Equal(t, []string{"--data-dir=/data/deltafin", "--api-key=not set", "--queue=7"}, rows)
	require.False(t, eval[bool](t, ctx, `document.querySelector("#settings") !== null`), "nothing to save under serve")
	shot(t, ctx, "settings-serve")
}
