package web

import (
	"bytes"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/deltafin/deltafin/internal/usertext"

	"github.com/deltafin/deltafin/engine"
	"github.com/deltafin/deltafin/server"
	"github.com/deltafin/deltafin/store"
)

//go:embed assets templates
var files embed.FS

// Options are what the page is served from.
type Options struct {
	// Server is the API the page forwards its answers to and whose queue
	// it lists.
	Server *server.Server
	// Store keeps the conversations; nil refuses asking (no background
	// responses without one).
	Store *store.Store
	// APIKey is the server's key ("" = none): the page then asks for it
	// once and forwards it to the API.
	APIKey string
	// Engine is the model served, for /model; nil shows no engine figures.
	Engine *engine.Model
	// Demo is set when the model is the built-in demo.
	Demo bool
	// Control is the menu-bar app (install, download, warming, settings);
	// nil under `deltafin serve`, where /model has no buttons and /settings
	// only shows.
	Control Control
	// Token is the same-origin token the page's state-changing requests
	// carry; the app keeps one across server restarts, so a page open
	// while the settings restart the server stays usable. "" picks one.
	Token string
	// Flags are the settings in force under deltafin serve (Control nil),
	// listed on /settings.
	Flags []Flag
	Log   *slog.Logger
}

// Web is the mounted page.
type Web struct {
	opts  Options
	log   *slog.Logger
	pages map[string]*template.Template
	token string // the same-origin token state-changing requests carry
	// samples is /model's history, and cells its last picture (model.go).
	mu      sync.Mutex
	samples []sample
	cellsMu sync.Mutex
	cells   struct {
		at          time.Time
		layers      []int
		experts     int
		place, heat string
	}
}

// New prepares the page; Mount it on the server.
func New(opts Options) (*Web, error) {
	if opts.Server == nil {
		return nil, fmt.Errorf("web: a server is needed")
	}
	w := &Web{opts: opts, log: opts.Log, pages: map[string]*template.Template{}}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	w.token = opts.Token
	if w.token == "" {
		var err error
		if w.token, err = NewToken(); err != nil {
			return nil, err
		}
	}
	w.firstSample()
	for _, name := range []string{"ask", "model", "settings", "login"} {
		t, err := template.New("layout.html").ParseFS(files, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("web: template %s: %w", name, err)
		}
		w.pages[name] = t
	}
	return w, nil
}

// NewToken returns a fresh same-origin token (Options.Token).
func NewToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("web: token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// Mount registers the page's routes on the server's echo (Server.Mount).
func (w *Web) Mount(e *echo.Echo) {
	// The guard goes on each route, not on a group: a group's middleware
	// makes echo route every unknown path through it, so an API client's
	// POST to a path that does not exist (/v1/embeddings, /api/chat) got
	// the page's "reload the page" 403 instead of the API's 404.
	g := guarded{e: e, mw: w.guard}
	assets, _ := fs.Sub(files, "assets")
	g.GET("/assets/*", echo.WrapHandler(http.StripPrefix("/assets/", http.FileServer(http.FS(assets)))))
	g.GET("/", w.page("ask", "Ask"))
	g.GET("/model", w.page("model", "Model"))
	g.GET("/settings", w.page("settings", "Settings"))
	g.POST("/login", w.login)

	g.GET("/api/conversations", w.listConversations)
	g.GET("/api/conversations/:id", w.getConversation)
	g.DELETE("/api/conversations/:id", w.deleteConversation)
	g.POST("/api/conversations/:id/turns/:n/done", w.turnDone)
	g.POST("/api/ask", w.ask)
	g.GET("/api/responses/:id/stream", w.streamResponse)
	g.POST("/api/responses/:id/cancel", w.cancelResponse)
	g.GET("/api/queue", w.queue)
	g.GET("/api/model", w.model)
	g.POST("/api/model/:action", w.act)
	g.POST("/api/model/check/:mode", w.checkDownload)
	g.GET("/api/settings", w.settings)
	g.POST("/api/settings", w.saveSettings)
}

// readJSON reads a JSON body of at most limit bytes into v (strict:
// refusing unknown fields). Its text is checked first, as the API checks
// its own (server.CheckText): a prompt with invalid UTF-8 or a lone
// surrogate is refused naming the field, not changed into U+FFFD.
func readJSON(c echo.Context, limit int64, v any, strict bool) error {
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, limit))
	if err != nil {
		return problem(c, http.StatusBadRequest, "bad_json", "read the request: %v", err)
	}
	var te *server.TextError
	if err := server.CheckText(body); errors.As(err, &te) {
		return problem(c, http.StatusBadRequest, "bad_text", "%v", te)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return problem(c, http.StatusBadRequest, "bad_json", "the request is not JSON: %v", err)
	}
	return nil
}

// guarded registers routes with the page's guard on each.
type guarded struct {
	e  *echo.Echo
	mw echo.MiddlewareFunc
}

func (g guarded) GET(path string, h echo.HandlerFunc)    { g.e.GET(path, h, g.mw) }
func (g guarded) POST(path string, h echo.HandlerFunc)   { g.e.POST(path, h, g.mw) }
func (g guarded) DELETE(path string, h echo.HandlerFunc) { g.e.DELETE(path, h, g.mw) }

// pageData is what every template gets.
type pageData struct {
	Title, Active, Token, ModelID, BaseURL string
	Next                                   string // the page to go to after signing in
	Demo, App                              bool
	Examples                               []example
	Flags                                  []Flag // deltafin serve's, on /settings
	Error                                  string
	// Notice is a warning every page shows (a damaged job store recovered).
	Notice string
}

func (w *Web) data(c echo.Context, active string) pageData {
	base := "http://" + c.Request().Host + "/v1"
	d := pageData{Title: active, Active: active, Token: w.token, ModelID: w.opts.Server.ModelID(),
		BaseURL: base, Demo: w.opts.Demo, App: w.opts.Control != nil, Examples: examples(base, w.opts.Server.ModelID(), w.opts.APIKey != ""),
		Flags: w.opts.Flags}
	if w.opts.Store != nil {
		if r := w.opts.Store.Recovered(); r != nil {
			d.Notice = capitalize(r.String()) + "."
		}
	}
	return d
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func (w *Web) page(name, title string) echo.HandlerFunc {
	return func(c echo.Context) error {
		return w.render(c, http.StatusOK, name, w.data(c, title))
	}
}

func (w *Web) render(c echo.Context, status int, name string, d pageData) error {
	c.Response().Header().Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	c.Response().WriteHeader(status)
	return w.pages[name].Execute(c.Response(), d)
}

// problem is a JSON error for the page's scripts.
func problem(c echo.Context, status int, code, format string, args ...any) error {
	return c.JSON(status, map[string]any{"error": map[string]string{"code": code, "message": fmt.Sprintf(format, args...)}})
}

// userText is an error's text for the page: without Go package prefixes.
func userText(err error) string { return usertext.Of(err) }
