package server

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/internal/usertext"
)

// TestErrorsCarryNoPackagePrefix: the error bodies clients show their
// users say what is wrong without the Go package names the errors were
// wrapped with below (the chat template's "chat: invalid message: …"), on
// the OpenAI and the Anthropic endpoints.
func TestErrorsCarryNoPackagePrefix(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, nil)
	for _, c := range []struct{ name, path, body, want string }{
		{"chat, orphan tool result", "/v1/chat/completions",
			`{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"tool","content":"42"}]}`, "tool_call_id"},
		{"responses, orphan tool output", "/v1/responses",
			`{"model":"m","input":[{"type":"function_call_output","call_id":"nope","output":"42"}]}`, "tool result names no tool and matches no call"},
		{"messages, orphan tool result", "/v1/messages",
			`{"model":"m","max_tokens":8,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"nope","content":"42"}]}]}`, "answers no tool_use block"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, body := post(t, base+c.path, c.body, "Content-Type", "application/json", "anthropic-version", "2023-06-01")
			require.Equal(t, http.StatusBadRequest, code, string(body))
			var e struct {
				Error struct{ Message string }
			}
			require.NoError(t, json.Unmarshal(body, &e), string(body))
			require.NotEmpty(t, e.Error.Message)
			require.False(t, usertext.Prefixed(e.Error.Message), "a package prefix in %q", e.Error.Message)
			require.Contains(t, e.Error.Message, c.want)
		})
	}
}
