package web_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/store"
)

// An API client's request to a path that does not exist gets the API's
// 404, in OpenAI's error shape and listing what exists, not the page's
// same-origin 403 ("reload the page"): the page's guard covers only the
// page's own routes.
func TestUnknownAPIPathIs404(t *testing.T) {
	t.Parallel()
	s := serve(t, "")
	body := `{"model":"deltafin-demo","input":"hi"}`
	for _, path := range []string{"/v1/embeddings", "/api/chat", "/api/generate", "/v1/audio/speech"} {
		code, b := call(t, http.MethodPost, s.base+path, body, "Content-Type", "application/json")
		require.Equal(t, http.StatusNotFound, code, "%s: %s", path, b)
		var e struct {
			Error struct {
				Message string  `json:"message"`
				Type    string  `json:"type"`
				Code    *string `json:"code"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal([]byte(b), &e), "%s: %s", path, b)
		require.Equal(t, "not_found", *e.Error.Code, path)
		require.Equal(t, "invalid_request_error", e.Error.Type, path)
		for _, route := range []string{"POST " + path, "POST /v1/chat/completions", "POST /v1/completions", "POST /v1/responses",
			"GET /v1/models", "GET /health", "GET /v1/responses/:id"} {
			require.Contains(t, e.Error.Message, route, path)
		}
		require.NotContains(t, e.Error.Message, "/api/ask", "the page's own routes are not the API's")
	}
	// Whatever /v1/messages is in this build (absent, or Anthropic's API
	// once added), it is never the page's guard answering.
	code, b := call(t, http.MethodPost, s.base+"/v1/messages", body, "Content-Type", "application/json")
	require.NotEqual(t, http.StatusForbidden, code, b)
	require.False(t, strings.Contains(b, "reload the page"), b)

	// The page's routes keep their guard.
	code, b = call(t, http.MethodPost, s.base+"/api/ask", `{"prompt":"hi"}`, "Content-Type", "application/json")
	require.Equal(t, http.StatusForbidden, code, b)
	require.Contains(t, b, "reload the page")
}

// The ask box refuses invalid UTF-8 and lone surrogates naming the field,
// instead of asking the model a prompt with U+FFFD in it.
func TestAskBadTextRefused(t *testing.T) {
	t.Parallel()
	s := serve(t, "")
	tok := pageToken(t, s.base)
	for _, body := range []string{"{\"prompt\":\"hi \xff\",\"thinking\":false}", `{"prompt":"hi \ud800","thinking":false}`} {
		code, b := call(t, http.MethodPost, s.base+"/api/ask", body, "Content-Type", "application/json", "X-Deltafin-Token", tok)
		require.Equal(t, http.StatusBadRequest, code, b)
		require.Contains(t, b, "bad_text", b)
		require.Contains(t, b, "prompt:", b)
	}
	convs, err := s.store.Conversations()
	require.NoError(t, err)
	require.Empty(t, convs, "nothing was asked")
}

// A job store found damaged at the start is said on every page.
func TestDamagedStoreNotice(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, store.FileName), nil, 0o600))
	s := serveIn(t, "", dir)
	for _, page := range []string{"/", "/model", "/settings"} {
		code, b := call(t, http.MethodGet, s.base+page, "")
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, b, `class="notice"`, page)
		require.Contains(t, b, "The job store was damaged (empty file)", page)
		require.Contains(t, b, "deltafin.db.damaged-", page)
	}
	fresh := serve(t, "")
	_, b := call(t, http.MethodGet, fresh.base+"/", "")
	require.NotContains(t, b, `class="notice"`)
}
