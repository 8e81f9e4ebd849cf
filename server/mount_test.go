package server

import (
	"net/http"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
)

// A mounted page passes the Host check but makes its own checks: the API's
// key and Origin rules stay on /v1 and /health.
func TestMount(t *testing.T) {
	t.Parallel()
	m, tok := tiny(t)
	opts := DefaultOptions()
	opts.APIKey = "k"
	s, err := New(opts, FromEngine(m), tok)
	require.NoError(t, err)
	s.Mount(func(e *echo.Echo) {
		e.GET("/page", func(c echo.Context) error { return c.String(http.StatusOK, "page") })
		e.POST("/page", func(c echo.Context) error { return c.String(http.StatusOK, "posted") })
	})
	base := host(t, s)
	code, body := get(t, base+"/page")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "page", string(body))
	code, _, _ = post(t, base+"/page", "x", "Origin", "http://elsewhere.example", "Content-Type", "text/plain")
	require.Equal(t, http.StatusOK, code, "the page's own rules, not the API's")
	code, _ = get(t, base+"/v1/models")
	require.Equal(t, http.StatusUnauthorized, code, "the API keeps its key")
	req, err := http.NewRequest(http.MethodGet, base+"/page", nil)
	require.NoError(t, err)
	req.Host = "rebind.example"
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "the Host check covers the page")
}
