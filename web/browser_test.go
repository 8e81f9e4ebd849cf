package web_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// One headless Chromium (Debian's chromium, which make deps installs) for
// the whole test binary; each test opens its own tab in it.
var (
	browser    context.Context
	browserErr error
)

func TestMain(m *testing.M) {
	os.Exit(runWithBrowser(m))
}

func runWithBrowser(m *testing.M) int {
	path := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		browserErr = fmt.Errorf("chromium is not installed (apt-get install chromium; make deps installs it)")
		return m.Run()
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath(path),
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("disable-background-networking", true),
		chromedp.WindowSize(1280, 860))
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		browserErr = fmt.Errorf("start chromium at %s: %w", path, err)
	}
	browser = ctx
	return m.Run()
}

// tab opens a new tab in a browser context of its own (its own cookies and
// storage: cookies are per host, not per port, so tests on 127.0.0.1 would
// share them), closed when the test ends. A missing browser fails the
// test, saying why: make deps installs chromium, so a skip would only hide
// a broken install.
func tab(t *testing.T) context.Context {
	t.Helper()
	if browserErr != nil {
		t.Fatal(browserErr)
	}
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	ctx, cancelTime := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() {
		cancelTime()
		cancel()
	})
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1280, 860)))
	return ctx
}

func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, steps...))
}

func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	require.NoError(t, err, expr)
	return v
}

// until waits for a JavaScript condition to hold (polled on animation
// frames), failing with what it waited for.
// A navigation under way (a form's submit, a reload) ends the poll with
// one of these: the poll then starts again in the new document.
func until(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(time.Until(deadline))))
		if err != nil && time.Now().Before(deadline) && navigating(err) {
			continue
		}
		require.NoError(t, err, "waiting for %s: %s", what, expr)
		return
	}
}

func navigating(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "navigated or closed") || strings.Contains(msg, "Cannot find context") ||
		strings.Contains(msg, "Execution context was destroyed")
}

// shot saves a screenshot of the whole page under bin/screenshots, once
// the page is laid out: a page just navigated to can report no width
// ("Cannot take screenshot with 0 width", seen once in a CI run on 2
// cores), so that answer is a wait for layout, then another try.
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	var b []byte
	deadline := time.Now().Add(30 * time.Second)
	for {
		until(t, ctx, "the page laid out", `document.readyState === "complete" && document.documentElement.getBoundingClientRect().width > 0`)
		var err error
		b, err = chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil && time.Now().Before(deadline) && (strings.Contains(err.Error(), "0 width") || navigating(err)) {
			continue
		}
		require.NoError(t, err, "screenshot %s", name)
		break
	}
	dir := filepath.Join("..", "bin", "screenshots")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "web-"+name+".png"), b, 0o644))
}
