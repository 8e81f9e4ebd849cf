package server

import (
	"crypto/subtle"
	"fmt"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
)

// The safety layer. The server runs on a user's machine next to a browser:
// any web page can make the browser send requests to 127.0.0.1, and a page
// whose DNS name rebinds to 127.0.0.1 can even read the answers. So:
// the Host header must be a loopback name, an IP literal or the configured
// host (a rebinding attack always carries the attacker's DNS name); a
// request with an Origin header is refused unless the origin is allowed
// (CORS is off by default); POST bodies must be JSON, which a cross-origin
// page cannot send without a preflight; and an optional API key guards a
// server exposed beyond loopback.

// forbidden is a 403 answer.
func forbidden(format string, args ...any) *apiError {
	return &apiError{status: http.StatusForbidden, kind: ErrForbidden, typ: "permission_error",
		code: "forbidden", msg: fmt.Sprintf(format, args...)}
}

// isAPI reports whether path is the API's (everything else belongs to a
// mounted page, Server.Mount).
func isAPI(path string) bool {
	return path == "/health" || path == "/v1" || strings.HasPrefix(path, "/v1/")
}

// apiOnly applies mw to the API's paths only.
func apiOnly(mw echo.MiddlewareFunc) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		guarded := mw(next)
		return func(c echo.Context) error {
			if !isAPI(c.Request().URL.Path) {
				return next(c)
			}
			return guarded(c)
		}
	}
}

// hostAllowed reports whether a Host header may reach the server.
func hostAllowed(hostHeader, configured string) bool {
	host := hostHeader
	if h, _, err := net.SplitHostPort(hostHeader); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	switch {
	case host == "":
		return false
	case host == "localhost" || strings.HasSuffix(host, ".localhost"):
		// Browsers resolve *.localhost to loopback themselves (RFC 6761),
		// so no DNS answer can rebind them.
		return true
	case net.ParseIP(host) != nil:
		return true
	}
	return host == strings.TrimSuffix(strings.ToLower(configured), ".")
}

func (s *Server) checkHost(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !hostAllowed(c.Request().Host, s.opts.Host) {
			return forbidden("host %q is not allowed: this server answers only loopback names, IP addresses and its configured host (DNS rebinding protection)", c.Request().Host)
		}
		return next(c)
	}
}

// checkOrigin refuses browser requests from origins that are not allowed,
// preflights included. Requests without Origin (every non-browser client)
// pass.
func (s *Server) checkOrigin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		origin := c.Request().Header.Get(echo.HeaderOrigin)
		if origin != "" && !s.originAllowed(origin) {
			return forbidden("origin %q is not allowed; start the server with --cors-origin %s to allow it", origin, origin)
		}
		return next(c)
	}
}

func (s *Server) originAllowed(origin string) bool {
	return slices.Contains(s.opts.CORSOrigins, "*") || slices.Contains(s.opts.CORSOrigins, origin)
}

// cors answers preflights for the allowed origins. The allowed headers are
// those OpenAI's and Anthropic's SDKs send.
func (s *Server) cors() echo.MiddlewareFunc {
	return middleware.CORSWithConfig(middleware.CORSConfig{
		AllowOriginFunc: func(origin string) (bool, error) { return s.originAllowed(origin), nil },
		AllowMethods:    []string{http.MethodGet, http.MethodPost, http.MethodOptions},
		AllowHeaders: []string{"Authorization", "Content-Type", "Accept", "User-Agent", "OpenAI-Organization", "OpenAI-Project",
			"OpenAI-Beta", "X-Stainless-Arch", "X-Stainless-Lang", "X-Stainless-OS", "X-Stainless-Package-Version",
			"X-Stainless-Retry-Count", "X-Stainless-Runtime", "X-Stainless-Runtime-Version", "X-Stainless-Async",
			"X-Stainless-Helper-Method", "X-Stainless-Poll-Helper", "X-Stainless-Custom-Poll-Interval",
			"X-Stainless-Timeout", "X-Stainless-Raw-Response",
			// Anthropic's SDK in a browser.
			"X-Api-Key", "Anthropic-Version", "Anthropic-Beta", "Anthropic-Dangerous-Direct-Browser-Access"},
		ExposeHeaders: []string{"Retry-After"},
		MaxAge:        600,
	})
}

// apiKey requires "Authorization: Bearer KEY", or "x-api-key: KEY" as
// Anthropic's clients send it, on everything but /health and CORS
// preflights (browsers send those without credentials).
func (s *Server) apiKey() echo.MiddlewareFunc {
	want := []byte(s.opts.APIKey)
	skip := func(c echo.Context) bool {
		return c.Path() == "/health" || c.Request().Method == http.MethodOptions
	}
	check := middleware.KeyAuthWithConfig(middleware.KeyAuthConfig{
		KeyLookup: "header:" + echo.HeaderAuthorization + ",header:X-Api-Key",
		Skipper:   skip,
		Validator: func(key string, c echo.Context) (bool, error) {
			return subtle.ConstantTimeCompare([]byte(key), want) == 1, nil
		},
		ErrorHandler: func(err error, c echo.Context) error {
			s.throttle.fail(clientAddr(c.Request()))
			return &apiError{status: http.StatusUnauthorized, kind: ErrUnauthorized, typ: "invalid_request_error",
				code: "invalid_api_key", msg: "missing or wrong API key: send Authorization: Bearer <key> or x-api-key: <key> (the server's --api-key)"}
		},
	})
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		checked := check(next)
		return func(c echo.Context) error {
			if skip(c) {
				return next(c)
			}
			if d := s.throttle.wait(clientAddr(c.Request())); d > 0 {
				secs := int((d + time.Second - 1) / time.Second)
				return &apiError{status: http.StatusTooManyRequests, kind: ErrUnauthorized, typ: "invalid_request_error",
					code: "too_many_wrong_keys", retryAfter: secs,
					msg: fmt.Sprintf("too many wrong API keys from this address: try again in %d s", secs)}
			}
			return checked(c)
		}
	}
}

// requireJSON refuses POST bodies that are not application/json.
func requireJSON(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if c.Request().Method != http.MethodPost || c.Request().ContentLength == 0 {
			return next(c) // no body (POST /v1/responses/{id}/cancel): nothing to type
		}
		ct := c.Request().Header.Get(echo.HeaderContentType)
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != echo.MIMEApplicationJSON {
			return &apiError{status: http.StatusUnsupportedMediaType, kind: ErrInvalidRequest, typ: "invalid_request_error",
				code: "unsupported_media_type", msg: fmt.Sprintf("the body must be application/json, not %q", ct)}
		}
		return next(c)
	}
}

// logRequests logs each request once it is answered.
func (s *Server) logRequests() echo.MiddlewareFunc {
	return middleware.RequestLoggerWithConfig(middleware.RequestLoggerConfig{
		LogMethod: true, LogURI: true, LogStatus: true, LogLatency: true, LogError: true, HandleError: true,
		LogValuesFunc: func(c echo.Context, v middleware.RequestLoggerValues) error {
			level := slog.LevelInfo
			switch {
			case v.Status >= 500:
				level = slog.LevelError
			case c.Path() == "/health" && v.Status < 400:
				level = slog.LevelDebug // monitors poll it every few seconds
			}
			attrs := []slog.Attr{slog.String("method", v.Method), slog.String("uri", v.URI),
				slog.Int("status", v.Status), slog.Duration("latency", v.Latency)}
			if v.Error != nil {
				attrs = append(attrs, slog.String("err", v.Error.Error()))
			}
			s.log.LogAttrs(c.Request().Context(), level, "request", attrs...)
			return nil
		},
	})
}
