package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestThinkingPrecedence is the table of controls.go: thinking.* over
// chat_template_kwargs over reasoning_effort over K3's defaults.
func TestThinkingPrecedence(t *testing.T) {
	t.Parallel()
	type want struct {
		thinking bool
		effort   string
		forget   bool
	}
	for _, c := range []struct {
		name, extra string
		want        want
	}{
		{"defaults", ``, want{true, "", false}},
		{"reasoning_effort low", `,"reasoning_effort":"low"`, want{true, "low", false}},
		{"reasoning_effort medium is high", `,"reasoning_effort":"medium"`, want{true, "high", false}},
		{"reasoning_effort minimal is low", `,"reasoning_effort":"minimal"`, want{true, "low", false}},
		{"reasoning_effort xhigh is max", `,"reasoning_effort":"xhigh"`, want{true, "max", false}},
		{"reasoning_effort none", `,"reasoning_effort":"none"`, want{false, "", false}},
		{"thinking disabled", `,"thinking":{"type":"disabled"}`, want{false, "", false}},
		{"thinking enabled keep all", `,"thinking":{"type":"enabled","keep":"all"}`, want{true, "", false}},
		{"thinking keep null", `,"thinking":{"type":"enabled","keep":null}`, want{true, "", false}},
		{"thinking.effort over reasoning_effort", `,"thinking":{"effort":"low"},"reasoning_effort":"max"`, want{true, "low", false}},
		{"thinking.effort over kwargs", `,"thinking":{"effort":"high"},"chat_template_kwargs":{"thinking_effort":"low"}`, want{true, "high", false}},
		{"thinking.effort none", `,"thinking":{"effort":"none"}`, want{false, "", false}},
		{"thinking enabled over reasoning_effort none", `,"thinking":{"type":"enabled"},"reasoning_effort":"none"`, want{true, "", false}},
		{"thinking disabled over reasoning_effort high", `,"thinking":{"type":"disabled"},"reasoning_effort":"high"`, want{false, "", false}},
		{"thinking enabled over kwargs off", `,"thinking":{"type":"enabled"},"chat_template_kwargs":{"thinking":false}`, want{true, "", false}},
		{"kwargs effort over reasoning_effort", `,"chat_template_kwargs":{"thinking_effort":"low"},"reasoning_effort":"high"`, want{true, "low", false}},
		{"kwargs medium is high", `,"chat_template_kwargs":{"thinking_effort":"medium"}`, want{true, "high", false}},
		{"kwargs off over reasoning_effort high", `,"chat_template_kwargs":{"thinking":false},"reasoning_effort":"high"`, want{false, "", false}},
		{"kwargs on over reasoning_effort none", `,"chat_template_kwargs":{"thinking":true},"reasoning_effort":"none"`, want{true, "", false}},
		{"kwargs enable_thinking off", `,"chat_template_kwargs":{"enable_thinking":false}`, want{false, "", false}},
		{"preserve_thinking false", `,"chat_template_kwargs":{"preserve_thinking":false}`, want{true, "", true}},
		{"preserve_thinking true", `,"chat_template_kwargs":{"preserve_thinking":true}`, want{true, "", false}},
		{"keep all over preserve_thinking false", `,"thinking":{"keep":"all"},"chat_template_kwargs":{"preserve_thinking":false}`, want{true, "", false}},
	} {
		g, e := decodeChat([]byte(`{"model":"k3-tiny","messages":[{"role":"user","content":"hi"}]`+c.extra+`}`), testLimits)
		require.Nil(t, e, c.name)
		require.Equal(t, c.want, want{g.thinking, g.effort, g.forget}, c.name)
		tc, e := checkThinking(nil, nil, nil, "")
		require.Nil(t, e)
		require.True(t, tc.thinking)
	}
}

// TestLenientFieldsListed: the fields local front-ends send are accepted,
// not refused, and named in a response header; any model name is served
// by the loaded model and the answer names the real id.
func TestLenientFieldsListed(t *testing.T) {
	_, base := startServer(t, nil)
	body := `{"model":"llama3:latest","messages":[{"role":"user","content":"hi"}],"max_tokens":2,"reasoning_effort":"none",` +
		`"keep_alive":"5m","options":{"num_ctx":4096},"repetition_penalty":1.1,"verbosity":"low"}`
	code, h, b := post(t, base+"/v1/chat/completions", body)
	require.Equal(t, http.StatusOK, code, string(b))
	ignored := strings.Split(h.Get(ignoredHeader), ",")
	require.Subset(t, ignored, []string{"keep_alive", "options", "repetition_penalty", "verbosity"})
	require.Contains(t, string(b), `"model":"`+tinyID+`"`)

	// Without lenient fields there is no header.
	code, h, b = post(t, base+"/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"max_tokens":2,"reasoning_effort":"none"}`)
	require.Equal(t, http.StatusOK, code, string(b))
	require.Empty(t, h.Get(ignoredHeader))

	// Codex's Responses request: client_metadata, include, text.verbosity,
	// reasoning {effort medium, summary auto}, prompt_cache_key, store false.
	code, h, b = post(t, base+"/v1/responses", `{"model":"gpt-5-codex","instructions":"be brief","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}],`+
		`"tools":[],"tool_choice":"auto","parallel_tool_calls":false,"reasoning":{"effort":"medium","summary":"auto"},"store":false,"stream":false,`+
		`"include":["reasoning.encrypted_content"],"prompt_cache_key":"thread-1","text":{"verbosity":"low"},"client_metadata":{"x":"y"},"max_output_tokens":3}`)
	require.Equal(t, http.StatusOK, code, string(b))
	require.ElementsMatch(t, []string{"client_metadata", "include", "text.verbosity"}, strings.Split(h.Get(ignoredHeader), ","))
	require.Contains(t, string(b), `"model":"`+tinyID+`"`)
	require.Contains(t, string(b), `"effort":"medium"`)
}
