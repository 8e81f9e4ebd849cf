package server

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/deltafin/deltafin/chat"
	"github.com/deltafin/deltafin/tokenizer"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
)

// decodeAnthropicError checks an error body in Anthropic's shape.
func decodeAnthropicError(t *testing.T, body []byte) AnthropicErrorDetail {
	t.Helper()
	var e AnthropicError
	require.NoError(t, decodeStrict(body, &e), string(body))
	require.Equal(t, "error", e.Type)
	require.NotEmpty(t, e.Error.Message)
	return e.Error
}

// TestMessagesBesidePage: with a page mounted whose guard covers every
// path it does not route (as the web page's CSRF guard does), the Messages
// API's paths are the API's own routes, with the API's checks.
func TestMessagesBesidePage(t *testing.T) {
	s, base := startServerWith(t, newAgentK3(mustTok(t), "Bash", ""), nil)
	s.Mount(func(e *echo.Echo) {
		g := e.Group("", func(next echo.HandlerFunc) echo.HandlerFunc {
			return func(c echo.Context) error { return c.String(http.StatusForbidden, "the page's token is missing") }
		})
		g.GET("/", func(c echo.Context) error { return c.String(http.StatusOK, "page") })
	})
	body := `{"model":"` + tinyID + `","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`
	status, _, b := post(t, base+"/v1/messages", body, "anthropic-version", "2023-06-01")
	require.Equal(t, http.StatusOK, status, string(b))
	var m Message
	require.NoError(t, json.Unmarshal(b, &m))
	require.Equal(t, "end_turn", *m.StopReason)
	status, _, b = post(t, base+"/v1/messages/count_tokens", `{"model":"`+tinyID+`","messages":[{"role":"user","content":"hi"}]}`)
	require.Equal(t, http.StatusOK, status, string(b))
}

func mustTok(t *testing.T) *tokenizer.Tokenizer {
	_, tok := tiny(t)
	return tok
}

// TestMessagesErrors: refusals name the field, in Anthropic's shape, for
// the endpoint's own checks and the server's (Host, API key).
func TestMessagesErrors(t *testing.T) {
	_, base := startServerWith(t, newAgentK3(mustTok(t), "Bash", ""), func(o *Options) { o.APIKey = "k" })
	ok := `{"model":"` + tinyID + `","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`
	for _, tc := range []struct {
		name, body string
		header     []string
		status     int
		typ, in    string
	}{
		{"no key", ok, nil, 401, "authentication_error", "x-api-key"},
		{"wrong key", ok, []string{"x-api-key", "nope"}, 401, "authentication_error", "API key"},
		{"host", ok, []string{"x-api-key", "k", "Host", "evil.example"}, 403, "permission_error", "evil.example"},
		{"max_tokens", `{"model":"` + tinyID + `","messages":[{"role":"user","content":"hi"}]}`, []string{"x-api-key", "k"}, 400, "invalid_request_error", "max_tokens"},
		{"unknown field", `{"model":"` + tinyID + `","max_tokens":8,"nope":1,"messages":[{"role":"user","content":"hi"}]}`, []string{"x-api-key", "k"}, 400, "invalid_request_error", "nope"},
		{"stop_sequences", `{"model":"` + tinyID + `","max_tokens":8,"stop_sequences":[""],"messages":[{"role":"user","content":"hi"}]}`, []string{"Authorization", "Bearer k"}, 400, "invalid_request_error", "stop_sequences[0]"},
		{"tool_result", `{"model":"` + tinyID + `","max_tokens":8,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":"r"}]}]}`, []string{"x-api-key", "k"}, 400, "invalid_request_error", "messages[0].content[0].tool_use_id"},
		{"prefill", `{"model":"` + tinyID + `","max_tokens":8,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"Sure"}]}`, []string{"x-api-key", "k"}, 400, "invalid_request_error", "messages[1]"},
		{"temperature", `{"model":"` + tinyID + `","max_tokens":8,"temperature":1.5,"messages":[{"role":"user","content":"hi"}]}`, []string{"x-api-key", "k"}, 400, "invalid_request_error", "temperature"},
		{"tool_choice", `{"model":"` + tinyID + `","max_tokens":8,"tool_choice":{"type":"any"},"messages":[{"role":"user","content":"hi"}]}`, []string{"x-api-key", "k"}, 400, "invalid_request_error", "needs tools"},
		{"server tool", `{"model":"` + tinyID + `","max_tokens":8,"tools":[{"type":"web_search_20250305","name":"web_search"}],"messages":[{"role":"user","content":"hi"}]}`, []string{"x-api-key", "k"}, 400, "invalid_request_error", "tools[0].type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/v1/messages", strings.NewReader(tc.body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			for i := 0; i+1 < len(tc.header); i += 2 {
				if tc.header[i] == "Host" {
					req.Host = tc.header[i+1]
					continue
				}
				req.Header.Set(tc.header[i], tc.header[i+1])
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, tc.status, resp.StatusCode, string(b))
			e := decodeAnthropicError(t, b)
			require.Equal(t, tc.typ, e.Type)
			require.Contains(t, e.Message, tc.in)
		})
	}
}

// TestMessagesStopSequence: the answer ends before the first stop
// sequence, with stop_reason stop_sequence naming it, streamed and not.
func TestMessagesStopSequence(t *testing.T) {
	_, base := startServerWith(t, newAgentK3(mustTok(t), "Bash", ""), nil)
	body := `{"model":"` + tinyID + `","max_tokens":64,"thinking":{"type":"disabled"},"stop_sequences":["zzz","tool"],"messages":[{"role":"user","content":"hi"}]}`
	status, _, b := post(t, base+"/v1/messages", body)
	require.Equal(t, http.StatusOK, status, string(b))
	var m Message
	require.NoError(t, json.Unmarshal(b, &m))
	require.Equal(t, "stop_sequence", *m.StopReason)
	require.Equal(t, "tool", *m.StopSequence)
	require.Len(t, m.Content, 1)
	require.Equal(t, "Shell ", *m.Content[0].Text)

	resp, next := stream(t, t.Context(), base+"/v1/messages", strings.Replace(body, `{`, `{"stream":true,`, 1))
	defer resp.Body.Close()
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	data, _ := readAll(t, next)
	var text string
	var types []string
	for _, d := range data {
		var ev struct {
			Type  string `json:"type"`
			Delta struct {
				Type         string  `json:"type"`
				Text         string  `json:"text"`
				StopReason   *string `json:"stop_reason"`
				StopSequence *string `json:"stop_sequence"`
			} `json:"delta"`
		}
		require.NoError(t, json.Unmarshal([]byte(d), &ev), d)
		types = append(types, ev.Type)
		text += ev.Delta.Text
		if ev.Type == "message_delta" {
			require.Equal(t, "stop_sequence", *ev.Delta.StopReason)
			require.Equal(t, "tool", *ev.Delta.StopSequence)
		}
	}
	require.Equal(t, "Shell ", text)
	require.Equal(t, []string{"message_start", "ping", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}, dedupe(types))
}

// dedupe drops repeats of the previous entry.
func dedupe(s []string) []string {
	var out []string
	for _, v := range s {
		if len(out) == 0 || out[len(out)-1] != v {
			out = append(out, v)
		}
	}
	return out
}

// TestMessagesPing: while the job waits for the engine, the stream sends
// Anthropic's ping events.
func TestMessagesPing(t *testing.T) {
	_, tok := tiny(t)
	m := newScripted(tok.EncodeSpecial("Hi" + chat.Close + "response" + chat.Sep + chat.Close + "message" + chat.Sep)...)
	m.info.VocabSize = tok.VocabSize()
	_, base := startServerWith(t, m, func(o *Options) { o.Heartbeat = time.Millisecond })
	resp, next := stream(t, t.Context(), base+"/v1/messages",
		`{"model":"`+tinyID+`","stream":true,"max_tokens":8,"thinking":{"type":"disabled"},"messages":[{"role":"user","content":"hi"}]}`)
	defer resp.Body.Close()
	<-m.started // the generation waits for proceed: only pings can come now
	pings := 0
	for pings < 3 {
		ev, ok := next()
		require.True(t, ok)
		if ev.data == `{"type":"ping"}` {
			pings++
		}
	}
	m.proceed <- struct{}{}
	data, _ := readAll(t, next)
	require.Contains(t, data[len(data)-1], `"message_stop"`)
}

// TestMessagesOmittedThinking: with thinking.display "omitted" the
// thinking block has no text but a signature that carries it, so the
// next turn renders K3's reasoning as if it had been sent.
func TestMessagesOmittedThinking(t *testing.T) {
	_, base := startServerWith(t, newAgentK3(mustTok(t), "Bash", ""), nil)
	status, _, b := post(t, base+"/v1/messages", `{"model":"`+tinyID+`","max_tokens":64,"thinking":{"type":"adaptive","display":"omitted"},"messages":[{"role":"user","content":"hi"}]}`)
	require.Equal(t, http.StatusOK, status, string(b))
	var m Message
	require.NoError(t, json.Unmarshal(b, &m))
	require.Equal(t, "thinking", m.Content[0].Type)
	require.Empty(t, *m.Content[0].Thinking)
	sig := *m.Content[0].Signature
	count := func(thinking string) int {
		body := `{"model":"` + tinyID + `","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[` +
			`{"type":"thinking","thinking":` + compact(t, thinking) + `,"signature":` + compact(t, sig) + `},{"type":"text","text":"Shell tool check"}]},` +
			`{"role":"user","content":"again"}]}`
		status, _, b := post(t, base+"/v1/messages/count_tokens", body)
		require.Equal(t, http.StatusOK, status, string(b))
		var c TokenCount
		require.NoError(t, json.Unmarshal(b, &c))
		return c.InputTokens
	}
	require.Equal(t, count("The user wants the shell tool run."), count(""))
}

// TestMessagesSampling: the Messages API samples with the chat path's
// seeded sampler: a seed sent comes back in X-Deltafin-Seed and gives the
// same answer again, one not sent is drawn and reported, and temperature 0
// is the greedy answer of the chat path for the same conversation.
func TestMessagesSampling(t *testing.T) {
	_, base := startServer(t, nil)
	msg := func(fields string) (string, string) {
		body := `{"model":"` + tinyID + `","max_tokens":12,"thinking":{"type":"disabled"},` + fields + `"messages":[{"role":"user","content":"Name a colour"}]}`
		status, h, b := post(t, base+"/v1/messages", body)
		require.Equal(t, http.StatusOK, status, string(b))
		var m Message
		require.NoError(t, json.Unmarshal(b, &m))
		var text string
		for _, c := range m.Content {
			if c.Text != nil {
				text += *c.Text
			}
		}
		return text, h.Get("X-Deltafin-Seed")
	}
	a, seed := msg(`"temperature":1,"seed":4242,`)
	require.Equal(t, "4242", seed)
	b, _ := msg(`"temperature":1,"seed":4242,`)
	require.Equal(t, a, b, "the same seed, the same answer")
	_, drawn := msg(``)
	require.NotEmpty(t, drawn, "a drawn seed is reported")

	greedy, _ := msg(`"temperature":0,`)
	status, _, cb := post(t, base+"/v1/chat/completions", `{"model":"`+tinyID+`","max_tokens":12,"temperature":0,"reasoning_effort":"none","messages":[{"role":"user","content":"Name a colour"}]}`)
	require.Equal(t, http.StatusOK, status, string(cb))
	var cc struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	require.NoError(t, json.Unmarshal(cb, &cc))
	require.NotEmpty(t, greedy)
	require.Equal(t, cc.Choices[0].Message.Content, greedy)
}
