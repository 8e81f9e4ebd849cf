package web

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"
)

// csp allows nothing but this origin: no inline script or style, no
// frames, no other site.
const csp = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// cookieName is the session cookie standing for the API key.
const cookieName = "deltafin_session"

// tokenHeader carries the page's same-origin token.
const tokenHeader = "X-Deltafin-Token"

// session is the cookie's value for key: a keyed hash, so the cookie
// neither holds the key nor outlives a change of it.
func session(key string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte("deltafin web session v1"))
	return hex.EncodeToString(m.Sum(nil))
}

// guard sets the security headers, asks for the API key where one is set,
// and refuses state-changing requests that are not the page's own.
func (w *Web) guard(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		// same-origin, not no-referrer: with no-referrer a form post carries
		// "Origin: null", which sameOrigin refuses.
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		r := c.Request()
		unsafe := r.Method != http.MethodGet && r.Method != http.MethodHead
		if unsafe && !sameOrigin(r) {
			return problem(c, http.StatusForbidden, "cross_origin", "a request from another site is refused")
		}
		path := r.URL.Path
		if path == "/login" || strings.HasPrefix(path, "/assets/") {
			return next(c)
		}
		if unsafe && subtle.ConstantTimeCompare([]byte(r.Header.Get(tokenHeader)), []byte(w.token)) != 1 {
			return problem(c, http.StatusForbidden, "bad_token", "the page's token is missing or stale: reload the page")
		}
		if !w.signedIn(r) {
			if strings.HasPrefix(path, "/api/") {
				return problem(c, http.StatusUnauthorized, "api_key", "this server has an API key: sign in on the page")
			}
			d := w.data(c, "Sign in")
			d.Next = path
			return w.render(c, http.StatusUnauthorized, "login", d)
		}
		return next(c)
	}
}

func (w *Web) signedIn(r *http.Request) bool {
	if w.opts.APIKey == "" {
		return true
	}
	ck, err := r.Cookie(cookieName)
	return err == nil && subtle.ConstantTimeCompare([]byte(ck.Value), []byte(session(w.opts.APIKey))) == 1
}

// sameOrigin reports whether a browser says the request comes from this
// page: Sec-Fetch-Site same-origin (or none sent, as by non-browser
// clients and older browsers), and an Origin, when sent, naming this host.
func sameOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin":
	default:
		return false
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && strings.EqualFold(u.Host, r.Host)
}

// login checks the key typed into the sign-in form and sets the session
// cookie.
func (w *Web) login(c echo.Context) error {
	if subtle.ConstantTimeCompare([]byte(c.FormValue("token")), []byte(w.token)) != 1 {
		return w.render(c, http.StatusForbidden, "login", w.withError(c, "The page was stale: try again."))
	}
	key := c.FormValue("key")
	if w.opts.APIKey == "" || subtle.ConstantTimeCompare([]byte(key), []byte(w.opts.APIKey)) != 1 {
		return w.render(c, http.StatusUnauthorized, "login", w.withError(c, "That is not the server's API key."))
	}
	c.SetCookie(&http.Cookie{Name: cookieName, Value: session(w.opts.APIKey), Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, MaxAge: 400 * 24 * 3600, Secure: c.Request().TLS != nil})
	next := c.FormValue("next")
	if next != "/model" && next != "/settings" {
		next = "/"
	}
	return c.Redirect(http.StatusSeeOther, next)
}

func (w *Web) withError(c echo.Context, msg string) pageData {
	d := w.data(c, "Sign in")
	d.Error, d.Next = msg, c.FormValue("next")
	return d
}
