package server

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/deltafin/deltafin/internal/usertext"
)

// Sentinels for the conditions callers branch on. Every apiError wraps one,
// so errors.Is works on what the handlers return.
var (
	// ErrInvalidRequest: the request is malformed or asks for something
	// the engine cannot honour (HTTP 400).
	ErrInvalidRequest = errors.New("server: invalid request")
	// ErrBusy: a generation is running and the queue is full (HTTP 429).
	ErrBusy = errors.New("server: busy")
	// ErrShuttingDown: the server stopped while the request ran; a stream
	// ends with it as an error event.
	ErrShuttingDown = errors.New("server: shutting down")
	// ErrUnauthorized: a wrong or missing API key (HTTP 401).
	ErrUnauthorized = errors.New("server: unauthorized")
	// ErrForbidden: a refused Host header or Origin (HTTP 403).
	ErrForbidden = errors.New("server: forbidden")
	// ErrModelNotFound: the request names a model this server does not
	// serve (HTTP 404).
	ErrModelNotFound = errors.New("server: model not found")
	// ErrGeneration: the engine failed (HTTP 500).
	ErrGeneration = errors.New("server: generation failed")
)

// An apiError is an error with everything OpenAI's error body carries. The
// HTTP error handler writes it as {"error": {...}}.
type apiError struct {
	status     int
	kind       error  // one of the sentinels above
	typ        string // OpenAI's error type
	code       string // machine-readable reason, "" for null
	param      string // the request field at fault, "" for null
	msg        string
	retryAfter int // seconds, for 429
}

func (e *apiError) Error() string {
	if e.param != "" {
		return fmt.Sprintf("%v: %s: %s", e.kind, e.param, e.msg)
	}
	return fmt.Sprintf("%v: %s", e.kind, e.msg)
}

func (e *apiError) Unwrap() error { return e.kind }

// text is the message as the client's user reads it: an error wrapped
// into it from below ("chat: …", "engine: …") loses its Go package prefix.
func (e *apiError) text() string { return usertext.Strip(e.msg) }

// body renders the error in OpenAI's shape.
func (e *apiError) body() ErrorBody {
	d := ErrorDetail{Message: e.text(), Type: e.typ}
	if e.param != "" {
		p := e.param
		d.Param = &p
	}
	if e.code != "" {
		c := e.code
		d.Code = &c
	}
	return ErrorBody{Error: d}
}

// Codes used in 400 answers, after OpenAI's.
const (
	codeInvalidValue = "invalid_value"
	codeUnsupported  = "unsupported_parameter"
	codeUnknown      = "unknown_parameter"
	codeMissing      = "missing_required_parameter"
	codeInvalidJSON  = "invalid_json"
)

// invalid is a 400 naming param.
func invalid(code, param, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, kind: ErrInvalidRequest, typ: "invalid_request_error",
		code: code, param: param, msg: fmt.Sprintf(format, args...)}
}

// unsupported is a 400 for a field the engine cannot honour.
func unsupported(param, format string, args ...any) *apiError {
	return invalid(codeUnsupported, param, format, args...)
}
