package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/deltafin/deltafin/engine"
	"github.com/deltafin/deltafin/store"
	"github.com/deltafin/deltafin/tokenizer"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
)

// Options configure a Server. Start from DefaultOptions: the zero value
// disables the memo.
type Options struct {
	// Host and Port to listen on; loopback by default. PortTries is how
	// many ports after Port Listen tries when Port is taken (0: only Port).
	Host      string
	Port      int
	PortTries int
	// MaxTokens is a hard cap on generated tokens for every request; 0 = none.
	MaxTokens int
	// Queue is how many jobs may wait while one generates; beyond it
	// requests get 429 with Retry-After. 0 = refuse at once.
	Queue int
	// MemoEntries and MemoBytes bound the response memo; 0 entries disables it.
	MemoEntries int
	MemoBytes   int64
	// APIKey, when set, is required as "Authorization: Bearer KEY".
	APIKey string
	// CORSOrigins lists browser origins allowed to call the API ("*" for
	// any); empty = CORS off and browser requests refused.
	CORSOrigins []string
	// BodyLimit bounds request bodies in bytes.
	BodyLimit int64
	// Heartbeat is the interval of SSE comments while the model works.
	Heartbeat time.Duration
	// HeaderTimeout bounds reading request headers and BodyTimeout reading
	// the body; IdleTimeout is how long a kept-alive connection waits for
	// its next request; ShutdownTimeout how long a shutdown lets open
	// connections drain before it cuts them (host.go). Nothing bounds
	// writing: a generation may take hours.
	HeaderTimeout   time.Duration
	BodyTimeout     time.Duration
	IdleTimeout     time.Duration
	ShutdownTimeout time.Duration
	// RetryAfter is the Retry-After advertised with a 429.
	RetryAfter time.Duration
	// Logger receives one line per request; nil discards.
	Logger *slog.Logger
	// ModelID, when set, is the id the model is served under instead of
	// its own (the app serves its built-in demo as "deltafin-demo"), and
	// ModelDescription a line /v1/models and /health give with it.
	ModelID, ModelDescription string
	// Store keeps responses and queued jobs across restarts (the data
	// directory's deltafin.db); nil: responses live only while they run,
	// and background ones and previous_response_id are refused.
	Store *store.Store
	// Retention is how long a finished stored response stays retrievable;
	// 0 keeps them until deleted.
	Retention time.Duration
	// OnResponse, if set, is called when a response ends (the app's
	// long-answer notification for background jobs).
	OnResponse func(Response)
}

// DefaultOptions returns the defaults: 127.0.0.1:8000, a line of 32, a memo of
// 32 entries and 64 MiB, 4 MiB bodies, a heartbeat every 10 s (clients'
// idle timeouts are commonly 15 s or more).
func DefaultOptions() Options {
	return Options{
		Host:            "127.0.0.1",
		Port:            8000,
		Queue:           32,
		MemoEntries:     32,
		MemoBytes:       64 << 20,
		BodyLimit:       4 << 20,
		Heartbeat:       10 * time.Second,
		HeaderTimeout:   10 * time.Second,
		BodyTimeout:     60 * time.Second,
		IdleTimeout:     2 * time.Minute,
		ShutdownTimeout: 10 * time.Second,
		RetryAfter:      2 * time.Second,
		Retention:       30 * 24 * time.Hour,
	}
}

// modelMeta is what the HTTP layer knows about the served model.
type modelMeta struct {
	id         string
	desc       string // what the model is, when it is not what it seems
	vocabSize  int
	contextLen int
	created    int64
}

// Server is the HTTP API. Create it with New; it is an http.Handler.
type Server struct {
	opts  Options
	meta  modelMeta
	log   *slog.Logger
	echo  *echo.Echo
	queue *queue
	memo  *memo

	model    Model
	tok      *tokenizer.Tokenizer
	chatStop []int // the ids that end an assistant turn

	// generations counts engine runs (memo hits excluded); emitsAfterStop
	// counts tokens handed to an emit callback after it had returned an
	// error: the engine must stop at the first (both read by tests).
	generations    atomic.Int64
	emitsAfterStop atomic.Int64

	// convo is the last completed generation's session (reuse.go);
	// reuses counts the generations that continued it.
	convo  convo
	reuses atomic.Int64

	// The Responses API's jobs (responses_job.go): the live ones by id,
	// the store, and the lifetime that background jobs run under.
	store    *store.Store
	life     context.Context
	stopLife context.CancelCauseFunc
	jobsMu   sync.Mutex
	jobs     map[string]*respJob
	running  sync.WaitGroup

	// throttle limits API-key guessing per client address (throttle.go).
	throttle *keyThrottle
	// started is set by the one Start a Server gets (host.go).
	started atomic.Bool

	// spec totals the generations' decode passes and drafts (/health).
	specMu sync.Mutex
	spec   engine.SpecStats
}

func newServer(opts Options, meta modelMeta) (*Server, error) {
	if opts.BodyLimit <= 0 {
		return nil, fmt.Errorf("server: body limit must be positive, got %d", opts.BodyLimit)
	}
	if opts.Heartbeat <= 0 || opts.BodyTimeout <= 0 {
		return nil, fmt.Errorf("server: heartbeat interval and body timeout must be positive, got %v and %v", opts.Heartbeat, opts.BodyTimeout)
	}
	if opts.Queue < 0 || opts.MaxTokens < 0 || opts.MemoEntries < 0 || opts.MemoBytes < 0 || opts.PortTries < 0 {
		return nil, fmt.Errorf("server: negative queue, max tokens, memo size or port tries")
	}
	if opts.HeaderTimeout < 0 || opts.IdleTimeout < 0 || opts.ShutdownTimeout < 0 {
		return nil, fmt.Errorf("server: negative header, idle or shutdown timeout (%v, %v, %v)", opts.HeaderTimeout, opts.IdleTimeout, opts.ShutdownTimeout)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{opts: opts, meta: meta, log: log, queue: newQueue(opts.Queue),
		memo: newMemo(opts.MemoEntries, opts.MemoBytes), store: opts.Store, jobs: map[string]*respJob{},
		throttle: newKeyThrottle()}
	s.life, s.stopLife = context.WithCancelCause(context.Background())
	if opts.Store != nil {
		if r := opts.Store.Recovered(); r != nil {
			log.Warn(r.String(), "reason", r.Reason, "moved_to", r.MovedTo, "jobs", r.Jobs, "conversations", r.Conversations)
		}
	}

	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleError
	e.Use(middleware.RecoverWithConfig(middleware.RecoverConfig{
		LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
			s.log.Error("panic in handler", "path", c.Path(), "err", err, "stack", string(stack))
			return err
		},
	}))
	e.Use(s.logRequests())
	e.Use(s.checkHost, apiOnly(s.checkOrigin))
	if len(opts.CORSOrigins) > 0 {
		e.Use(apiOnly(s.cors()))
	}
	if opts.APIKey != "" {
		e.Use(apiOnly(s.apiKey()))
	}
	e.Use(apiOnly(middleware.BodyLimit(strconv.FormatInt(opts.BodyLimit, 10) + "B")))
	e.Use(apiOnly(requireJSON))

	e.GET("/health", s.health)
	e.GET("/v1/models", s.models)
	e.GET("/v1/models/:id", s.modelByID)
	e.POST("/v1/chat/completions", s.chatCompletions)
	e.POST("/v1/completions", s.completions)
	e.POST("/v1/messages", s.messages)
	e.POST("/v1/messages/count_tokens", s.countTokens)
	e.POST("/v1/responses", s.createResponse)
	e.GET("/v1/responses/:id", s.getResponse)
	e.DELETE("/v1/responses/:id", s.deleteResponse)
	e.POST("/v1/responses/:id/cancel", s.cancelResponse)
	e.GET("/v1/responses/:id/input_items", s.inputItems)
	s.echo = e
	return s, nil
}

// Mount adds routes beside the API, on the same port (the web page,
// package web): f registers them on the server's echo. They pass the Host
// check, the recovery and the request log like every request; the API's
// own checks (Origin, API key, body limit, JSON bodies) stay on /v1 and
// /health, and a mounted page makes its own. Call it before serving.
func (s *Server) Mount(f func(e *echo.Echo)) { f(s.echo) }

// ServeHTTP serves the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.echo.ServeHTTP(w, r) }

// handleError writes every error in OpenAI's shape, or Anthropic's on the
// Messages API's paths.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = fromEchoError(err)
		if ae.status == http.StatusNotFound {
			ae.msg = fmt.Sprintf("no such endpoint: %s %s; this server has %s", c.Request().Method, c.Request().URL.Path, strings.Join(s.endpoints(), ", "))
		}
	}
	if ae.status == http.StatusTooManyRequests || ae.retryAfter > 0 {
		c.Response().Header().Set("Retry-After", strconv.Itoa(ae.retryAfter))
	}
	if ae.status >= 500 {
		s.log.Error("request failed", "path", c.Path(), "err", err)
	}
	var werr error
	switch {
	case c.Request().Method == http.MethodHead:
		werr = c.NoContent(ae.status)
	case isAnthropic(c.Request().URL.Path):
		werr = c.JSON(ae.status, ae.anthropicBody())
	default:
		werr = c.JSON(ae.status, ae.body())
	}
	if werr != nil {
		s.log.Debug("write error response", "err", werr)
	}
}

// fromEchoError maps echo's own errors (404, 405, 413, ...) to OpenAI's shape.
func fromEchoError(err error) *apiError {
	var he *echo.HTTPError
	if !errors.As(err, &he) {
		return &apiError{status: http.StatusInternalServerError, kind: ErrGeneration, typ: "server_error",
			code: "internal_error", msg: "internal error: " + err.Error()}
	}
	ae := &apiError{status: he.Code, kind: ErrInvalidRequest, typ: "invalid_request_error", msg: fmt.Sprint(he.Message)}
	switch he.Code {
	case http.StatusNotFound:
		ae.code, ae.msg = "not_found", "no such endpoint"
	case http.StatusMethodNotAllowed:
		ae.code = "method_not_allowed"
	case http.StatusRequestEntityTooLarge:
		ae.code, ae.msg = "request_too_large", "the request body is larger than the server's limit"
	}
	if he.Code >= 500 {
		ae.typ, ae.kind = "server_error", ErrGeneration
	}
	return ae
}

// endpoints lists the API's routes as "METHOD /path", read from the
// router, so a route added anywhere (by another file, or a mounted
// package under /v1) is listed without this list being kept by hand.
func (s *Server) endpoints() []string {
	var out []string
	for _, r := range s.echo.Routes() {
		if isAPI(r.Path) && validMethod(r.Method) {
			out = append(out, r.Method+" "+r.Path)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// validMethod skips echo's internal pseudo-methods (its not-found routes).
func validMethod(m string) bool {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
		return true
	}
	return false
}

// readBody reads the (size-limited) body under its own deadline, then
// lifts the deadline so that it cannot cut the generation that follows.
func (s *Server) readBody(c echo.Context) ([]byte, error) {
	rc := http.NewResponseController(c.Response())
	// Errors mean the connection cannot take deadlines (HTTP/2 with old
	// proxies); the size limit still bounds the read.
	_ = rc.SetReadDeadline(time.Now().Add(s.opts.BodyTimeout))
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		// Close the connection after the answer: net/http would otherwise
		// try to read the rest of the body before answering.
		c.Response().Header().Set(echo.HeaderConnection, "close")
		var he *echo.HTTPError
		if errors.As(err, &he) {
			return nil, err
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil, &apiError{status: http.StatusRequestTimeout, kind: ErrInvalidRequest, typ: "invalid_request_error",
				code: "timeout", msg: fmt.Sprintf("the request body did not arrive within %v", s.opts.BodyTimeout)}
		}
		return nil, invalid(codeInvalidJSON, "", "read request body: %v", err)
	}
	_ = rc.SetReadDeadline(time.Time{})
	var te *TextError
	if err := CheckText(body); errors.As(err, &te) {
		return nil, invalid(codeInvalidValue, te.Path, "%v", te)
	}
	return body, nil
}

func (s *Server) health(c echo.Context) error {
	qs := s.queue.status()
	h := Health{Status: "ok", Model: s.meta.id, Description: s.meta.desc, Busy: qs.Running != nil, Queued: len(qs.Queued), Queue: qs}
	s.specMu.Lock()
	sp := s.spec
	s.specMu.Unlock()
	h.Drafting = Drafting{TargetPasses: sp.TargetPasses(), VerifyPasses: sp.Passes, Drafted: sp.Drafted, Accepted: sp.Accepted,
		BytesPerToken: math.Round(sp.BytesPerToken())}
	if s.model != nil {
		h.Drafting.Draft = s.model.Info().Draft
	}
	if s.store != nil {
		h.StoreRecovered = s.store.Recovered()
	}
	return c.JSON(http.StatusOK, h)
}

func (s *Server) modelObject() ModelObject {
	return ModelObject{ID: s.meta.id, Object: "model", Created: s.meta.created, OwnedBy: "deltafin", Description: s.meta.desc}
}

func (s *Server) models(c echo.Context) error {
	return c.JSON(http.StatusOK, ModelList{Object: "list", Data: []ModelObject{s.modelObject()}})
}

func (s *Server) modelByID(c echo.Context) error {
	if id := c.Param("id"); id != s.meta.id {
		return checkModelID(id, limits{modelID: s.meta.id})
	}
	return c.JSON(http.StatusOK, s.modelObject())
}

// Queue is a snapshot of the job queue: what runs, what waits and the
// measured rates (the menu shows it; /health serves it).
func (s *Server) Queue() QueueStatus { return s.queue.status() }

// ModelID is the id the server advertises.
func (s *Server) ModelID() string { return s.meta.id }
