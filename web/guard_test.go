package web_test

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// pageToken reads the page's same-origin token the way its scripts do.
func pageToken(t *testing.T, base string) string {
	t.Helper()
	code, body := call(t, http.MethodGet, base+"/", "")
	require.Equal(t, http.StatusOK, code)
	_, rest, ok := strings.Cut(body, `name="deltafin-token" content="`)
	require.True(t, ok)
	tok, _, _ := strings.Cut(rest, `"`)
	return tok
}

// A state-changing request that is not the page's own is refused: no
// token, another site's Origin or Sec-Fetch-Site; the page's own passes.
func TestCrossOriginRefused(t *testing.T) {
	t.Parallel()
	s := serve(t, "")
	tok := pageToken(t, s.base)
	ask := `{"prompt":"hi","thinking":false}`
	for _, tc := range []struct {
		name   string
		header []string
		want   int
	}{
		{"no token", []string{"Content-Type", "application/json"}, http.StatusForbidden},
		{"wrong token", []string{"Content-Type", "application/json", "X-Deltafin-Token", "nope"}, http.StatusForbidden},
		{"another origin", []string{"Content-Type", "application/json", "X-Deltafin-Token", tok, "Origin", "http://evil.example"}, http.StatusForbidden},
		{"another port", []string{"Content-Type", "application/json", "X-Deltafin-Token", tok, "Origin", "http://127.0.0.1:1"}, http.StatusForbidden},
		{"cross-site fetch", []string{"Content-Type", "application/json", "X-Deltafin-Token", tok, "Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
		{"same-site fetch", []string{"Content-Type", "application/json", "X-Deltafin-Token", tok, "Sec-Fetch-Site", "same-site"}, http.StatusForbidden},
		{"the page", []string{"Content-Type", "application/json", "X-Deltafin-Token", tok, "Origin", s.base, "Sec-Fetch-Site", "same-origin"}, http.StatusOK},
	} {
		code, body := call(t, http.MethodPost, s.base+"/api/ask", ask, tc.header...)
		require.Equal(t, tc.want, code, "%s: %s", tc.name, body)
	}
	code, _ := call(t, http.MethodGet, s.base+"/", "", "Host", "evil.example")
	require.Equal(t, http.StatusForbidden, code, "the API's Host check guards the page too")

	// A real cross-site attempt: a page on another origin makes the
	// browser post to the server. Nothing is asked.
	ctx := tab(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	evil := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!doctype html><form id="f" method="post" action="%s/api/ask" enctype="text/plain"><input name='{"prompt":"pwned","x":"' value='"}'></form>
<script>fetch(%q, {method: "POST", mode: "no-cors", body: '{"prompt":"pwned"}'}).finally(() => { document.title = "sent"; document.getElementById("f").submit(); });</script>`, s.base, s.base+"/api/ask")
	})}
	go func() { _ = evil.Serve(ln) }()
	t.Cleanup(func() { _ = evil.Close() })
	other := "http://localhost:" + strings.Split(ln.Addr().String(), ":")[1]
	do(t, ctx, chromedp.Navigate(other+"/"))
	require.Eventually(t, func() bool {
		n := 0
		for _, r := range s.requests() {
			if r == "POST /api/ask 403" {
				n++
			}
		}
		return n >= 2+6 // the fetch and the form, after the six above
	}, 30*time.Second, 10*time.Millisecond, "%v", s.requests())
	convs, err := s.store.Conversations()
	require.NoError(t, err)
	require.Len(t, convs, 1, "only the page's own ask got through")
}

// With an API key, the page asks for it once and keeps an HttpOnly
// cookie; the API itself still wants the key.
func TestAPIKeySignIn(t *testing.T) {
	t.Parallel()
	s := serve(t, "sekret")
	ctx := tab(t)
	do(t, ctx, chromedp.Navigate(s.base+"/model"))
	until(t, ctx, "the sign-in form", `document.querySelector('input[name="key"]') !== null`)
	require.Equal(t, "", eval[string](t, ctx, `document.querySelector("#prompt") ? "ask" : ""`))
	do(t, ctx, chromedp.SendKeys(chromedp.CSS(`input[name="key"]`), "wrong"), chromedp.Submit(chromedp.CSS("form")))
	until(t, ctx, "refused", `document.querySelector(".error") !== null && document.querySelector(".error").textContent.includes("not the server's API key")`)
	shot(t, ctx, "sign-in")
	do(t, ctx, chromedp.SendKeys(chromedp.CSS(`input[name="key"]`), "sekret"), chromedp.Submit(chromedp.CSS("form")))
	until(t, ctx, "back on the model page", `location.pathname === "/model" && document.querySelector("#cells") !== null`)
	do(t, ctx, chromedp.Navigate(s.base+"/"))
	until(t, ctx, "the ask page", `document.querySelector("#prompt") !== null && document.querySelector("#jobs li") !== null`)
	require.Equal(t, "", eval[string](t, ctx, `document.cookie`), "the cookie is HttpOnly")
	// The page works: it asks and lists through the cookie.
	thinking(t, ctx, false)
	s.gate.open()
	do(t, ctx, chromedp.SendKeys(chromedp.CSS("#prompt-text"), "hello"), chromedp.Click(chromedp.CSS("#send")))
	until(t, ctx, "an answer", lastAnswer+` && `+lastAnswer+`.dataset.status === "completed"`)

	code, _ := call(t, http.MethodGet, s.base+"/v1/models", "")
	require.Equal(t, http.StatusUnauthorized, code, "the API wants the key")
	code, _ = call(t, http.MethodGet, s.base+"/api/conversations", "")
	require.Equal(t, http.StatusUnauthorized, code, "so does the page's data, without the cookie")
	code, _ = call(t, http.MethodGet, s.base+"/v1/models", "", "Authorization", "Bearer sekret")
	require.Equal(t, http.StatusOK, code)
}

// Every page fits a 375 px wide phone screen: no horizontal scroll.
func TestNarrow(t *testing.T) {
	t.Parallel()
	_, base, _ := startApp(t, t.TempDir())
	ctx := tab(t)
	do(t, ctx, chromedp.EmulateViewport(375, 812))
	for _, p := range []struct{ path, ready, name string }{
		{"/", `document.querySelector("#jobs li") !== null`, "ask-375"},
		{"/model", `document.querySelector("#cells").dataset.cells !== undefined`, "model-375"},
		{"/settings", `document.querySelector("#s-port").value !== ""`, "settings-375"},
	} {
		do(t, ctx, chromedp.Navigate(base+p.path))
		until(t, ctx, p.path, p.ready)
		require.LessOrEqual(t, eval[int](t, ctx, `document.documentElement.scrollWidth`), 375, "%s scrolls sideways", p.path)
		shot(t, ctx, p.name)
	}
}

// The Markdown renderer escapes everything it does not mark up.
func TestMarkdownSafe(t *testing.T) {
	t.Parallel()
	s := serve(t, "")
	ctx := tab(t)
	do(t, ctx, chromedp.Navigate(s.base+"/"))
	until(t, ctx, "the renderer", `typeof markdown === "object"`)
	html := eval[string](t, ctx, "markdown.render(\"# Title\\n<img src=x onerror=alert(1)> **bold** `<b>` [a](javascript:alert(1)) [b](https://example.com)\\n\\n```go\\nfmt.Println(\\\"<script>\\\")\\n```\\n- one\\n- two\")")
	require.NotContains(t, html, "<img")
	require.NotContains(t, html, "<script")
	require.NotContains(t, html, `href="javascript`)
	require.Contains(t, html, "&lt;img src=x onerror=alert(1)&gt;")
	require.Contains(t, html, "<h1>Title</h1>")
	require.Contains(t, html, "<strong>bold</strong>")
	require.Contains(t, html, "<code>&lt;b&gt;</code>")
	require.Contains(t, html, `<a href="https://example.com" rel="noopener noreferrer" target="_blank">b</a>`)
	require.Contains(t, html, `<pre><code class="language-go">fmt.Println(&quot;&lt;script&gt;&quot;)</code></pre>`)
	require.Contains(t, html, "<ul><li>one</li><li>two</li></ul>")
	// A code block's copy button copies the block.
	do(t, ctx, chromedp.Evaluate[chromedp.Void]("document.querySelector('#turns').insertAdjacentHTML('beforeend', '<div class=\"md\">' + markdown.render('```\\nmake test\\n```') + '</div>')"),
		chromedp.Click(chromedp.CSS(".codeblock .copy")))
	until(t, ctx, "copied", `document.querySelector(".codeblock .copy").textContent === "Copied"`)

	// The page's CSP would stop an injected script anyway.
	code, body := call(t, http.MethodGet, s.base+"/", "")
	require.Equal(t, http.StatusOK, code)
	require.NotContains(t, body, "<script>", "no inline script")

	// Under deltafin serve (no app) the settings are the flags'.
	code, body = call(t, http.MethodGet, s.base+"/settings", "")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "deltafin serve --help")
	code, _ = call(t, http.MethodGet, s.base+"/api/settings", "")
	require.Equal(t, http.StatusNotImplemented, code)
}
