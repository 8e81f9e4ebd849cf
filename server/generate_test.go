package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/deltafin/deltafin/chat"
	"github.com/deltafin/deltafin/engine"
	"github.com/stretchr/testify/require"
)

// chatExpect is what the server must answer for a chat: the engine run
// directly on the same rendered prompt, split by the same parser.
type chatExpect struct {
	prompt             []int
	tokens             []int
	finish             string
	reasoning, content string   // non-streamed
	deltas             []string // streamed: "r:"/"c:" prefixed, in order
}

func expectChat(t *testing.T, msgs []chat.Message, opts chat.Options, maxNew int) chatExpect {
	t.Helper()
	return expectChatSampled(t, msgs, opts, maxNew, engine.Sampling{})
}

// expectChatSampled is expectChat with sampling.
func expectChatSampled(t *testing.T, msgs []chat.Message, opts chat.Options, maxNew int, samp engine.Sampling) chatExpect {
	t.Helper()
	_, tok := tiny(t)
	segs, err := chat.Render(msgs, opts)
	require.NoError(t, err)
	var e chatExpect
	e.prompt = chat.Tokenize(tok, segs)
	toks, res := directSampled(t, e.prompt, maxNew, chat.StopTokens(tok), samp)
	e.tokens, e.finish = toks, res.FinishReason
	p := chat.NewTokenParser(tok, opts)
	add := func(r, c string) {
		if r != "" {
			e.deltas = append(e.deltas, "r:"+r)
		}
		if c != "" {
			e.deltas = append(e.deltas, "c:"+c)
		}
	}
	for _, id := range toks {
		add(p.Add(id))
	}
	add(p.Finish(e.finish == "length"))
	e.reasoning, e.content = p.Result()
	return e
}

func TestChatMatchesEngine(t *testing.T) {
	_, base := startServer(t, func(o *Options) { o.MemoEntries = 0 })
	user := []chat.Message{{Role: "user", Content: "What is the capital of France?"}}
	tests := []struct {
		name     string
		extra    string
		opts     chat.Options
		thinking bool
	}{
		{"thinking max", ``, chat.DefaultOptions(), true},
		{"effort low", `,"reasoning_effort":"low"`, chat.Options{Thinking: true, Effort: "low"}, true},
		{"thinking off", `,"reasoning_effort":"none"`, chat.Options{Thinking: false}, false},
		{"thinking off by kwargs", `,"chat_template_kwargs":{"thinking":false}`, chat.Options{Thinking: false}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := expectChat(t, user, tc.opts, 12)
			code, _, body := post(t, base+"/v1/chat/completions",
				`{"model":"`+tinyID+`","temperature":0,"messages":[{"role":"user","content":"What is the capital of France?"}],"max_tokens":12`+tc.extra+`}`)
			require.Equal(t, http.StatusOK, code, string(body))
			var got ChatCompletion
			require.NoError(t, json.Unmarshal(body, &got))
			require.True(t, strings.HasPrefix(got.ID, "chatcmpl-"))
			require.Equal(t, "chat.completion", got.Object)
			require.Equal(t, tinyID, got.Model)
			require.Positive(t, got.Created)
			require.Len(t, got.Choices, 1)
			ch := got.Choices[0]
			require.Equal(t, "assistant", ch.Message.Role)
			require.Equal(t, want.finish, ch.FinishReason)
			require.Equal(t, want.content, ch.Message.Content)
			if tc.thinking {
				require.NotNil(t, ch.Message.ReasoningContent)
				require.Equal(t, want.reasoning, *ch.Message.ReasoningContent)
			} else {
				require.NotContains(t, string(body), "reasoning_content")
			}
			require.Equal(t, Usage{PromptTokens: len(want.prompt), CompletionTokens: len(want.tokens),
				TotalTokens: len(want.prompt) + len(want.tokens)}, got.Usage)
		})
	}
}

func TestChatConversationMatchesEngine(t *testing.T) {
	_, base := startServer(t, nil)
	msgs := []chat.Message{
		{Role: "system", Content: "You are terse."},
		{Role: "user", Name: "alice", Parts: []chat.Part{{Type: "text", Text: "part one, "}, {Type: "text", Text: "part two"}}},
		{Role: "assistant", Content: "", ReasoningContent: "Call the tool.", ToolCalls: []chat.ToolCall{{ID: "call_1", Type: "function",
			Function: chat.FunctionCall{Name: "get_weather", Arguments: `{"city":"Paris"}`}}}},
		{Role: "tool", ToolCallID: "call_1", Content: "sunny"},
	}
	tool := `{"type":"function","function":{"name":"get_weather","description":"Weather for a city","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}`
	opts := chat.DefaultOptions()
	opts.Tools = []chat.Tool{chat.Tool(tool)}
	want := expectChat(t, msgs, opts, 6)
	code, _, body := post(t, base+"/v1/chat/completions", `{"model":"`+tinyID+`","temperature":0,"max_completion_tokens":6,"messages":[
		{"role":"system","content":"You are terse."},
		{"role":"user","name":"alice","content":[{"type":"text","text":"part one, "},{"type":"text","text":"part two"}]},
		{"role":"assistant","content":"","reasoning_content":"Call the tool.","tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},
		{"role":"tool","tool_call_id":"call_1","content":"sunny"}],"tools":[`+tool+`],"tool_choice":"auto"}`)
	require.Equal(t, http.StatusOK, code, string(body))
	var got ChatCompletion
	require.NoError(t, json.Unmarshal(body, &got))
	require.Equal(t, len(want.prompt), got.Usage.PromptTokens)
	require.Equal(t, len(want.tokens), got.Usage.CompletionTokens)
	require.Equal(t, want.content, got.Choices[0].Message.Content)
	require.Equal(t, want.reasoning, *got.Choices[0].Message.ReasoningContent)
}

func TestChatStream(t *testing.T) {
	_, base := startServer(t, nil)
	want := expectChat(t, []chat.Message{{Role: "user", Content: "Hi"}}, chat.DefaultOptions(), 10)
	for _, includeUsage := range []bool{true, false} {
		t.Run(fmt.Sprintf("include_usage=%v", includeUsage), func(t *testing.T) {
			resp, next := stream(t, t.Context(), base+"/v1/chat/completions",
				fmt.Sprintf(`{"model":%q,"temperature":0,"messages":[{"role":"user","content":"Hi"}],"max_tokens":10,"stream":true,"stream_options":{"include_usage":%v}}`, tinyID, includeUsage))
			defer resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
			data, _ := readAll(t, next)
			require.Equal(t, "[DONE]", data[len(data)-1])
			data = data[:len(data)-1]

			var chunks []ChatChunk
			var ids = map[string]bool{}
			for _, d := range data {
				var raw map[string]json.RawMessage
				require.NoError(t, json.Unmarshal([]byte(d), &raw), d)
				u, hasUsage := raw["usage"]
				require.Equal(t, includeUsage, hasUsage, "usage is present (null until the last chunk) exactly when asked for: %s", d)
				var c ChatChunk
				require.NoError(t, json.Unmarshal([]byte(d), &c))
				require.Equal(t, "chat.completion.chunk", c.Object)
				ids[c.ID] = true
				if hasUsage && string(u) != "null" {
					require.NotNil(t, c.Usage)
				}
				chunks = append(chunks, c)
			}
			require.Len(t, ids, 1, "every chunk carries the same id")

			require.Equal(t, "assistant", chunks[0].Choices[0].Delta.Role, "the first chunk names the role")
			if includeUsage {
				last := chunks[len(chunks)-1]
				require.Empty(t, last.Choices)
				require.Equal(t, &Usage{PromptTokens: len(want.prompt), CompletionTokens: len(want.tokens),
					TotalTokens: len(want.prompt) + len(want.tokens)}, last.Usage)
				chunks = chunks[:len(chunks)-1]
			}
			final := chunks[len(chunks)-1]
			require.NotNil(t, final.Choices[0].FinishReason)
			require.Equal(t, want.finish, *final.Choices[0].FinishReason)
			require.Equal(t, ChatDelta{}, final.Choices[0].Delta)

			var deltas []string
			for _, c := range chunks[1 : len(chunks)-1] {
				require.Len(t, c.Choices, 1)
				require.Nil(t, c.Choices[0].FinishReason)
				d := c.Choices[0].Delta
				require.True(t, (d.Content == nil) != (d.ReasoningContent == nil), "one channel per chunk")
				if d.ReasoningContent != nil {
					deltas = append(deltas, "r:"+*d.ReasoningContent)
				} else {
					deltas = append(deltas, "c:"+*d.Content)
				}
			}
			require.Equal(t, want.deltas, deltas)
			sawContent := false
			for _, d := range deltas {
				if strings.HasPrefix(d, "c:") {
					sawContent = true
				} else {
					require.False(t, sawContent, "reasoning never follows content")
				}
			}
		})
	}
}

func TestCompletionsMatchEngine(t *testing.T) {
	_, base := startServer(t, func(o *Options) { o.MemoEntries = 0 })
	_, tok := tiny(t)
	text := "The capital of France is"
	ids := tok.Encode(text)
	idsJSON := compact(t, ids)
	tests := []struct {
		name   string
		prompt string
	}{
		{"string", `"` + text + `"`},
		{"string in array", `["` + text + `"]`},
		{"token ids", idsJSON},
		{"token ids in array", `[` + idsJSON + `]`},
	}
	wantToks, res := direct(t, ids, 9, nil)
	require.Equal(t, "length", res.FinishReason, "a raw completion runs to its limit")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, body := post(t, base+"/v1/completions", `{"model":"`+tinyID+`","temperature":0,"prompt":`+tc.prompt+`,"max_tokens":9}`)
			require.Equal(t, http.StatusOK, code, string(body))
			var got Completion
			require.NoError(t, json.Unmarshal(body, &got))
			require.True(t, strings.HasPrefix(got.ID, "cmpl-"))
			require.Equal(t, "text_completion", got.Object)
			require.Len(t, got.Choices, 1)
			require.Equal(t, tok.Decode(wantToks), got.Choices[0].Text)
			require.Equal(t, "length", *got.Choices[0].FinishReason)
			require.Equal(t, &Usage{PromptTokens: len(ids), CompletionTokens: 9, TotalTokens: len(ids) + 9}, got.Usage)
		})
	}

	t.Run("stream", func(t *testing.T) {
		resp, next := stream(t, t.Context(), base+"/v1/completions",
			`{"model":"`+tinyID+`","temperature":0,"prompt":`+idsJSON+`,"max_tokens":9,"stream":true,"stream_options":{"include_usage":true}}`)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		data, _ := readAll(t, next)
		require.Equal(t, "[DONE]", data[len(data)-1])
		var text strings.Builder
		var finish string
		var u *Usage
		for _, d := range data[:len(data)-1] {
			var c Completion
			require.NoError(t, json.Unmarshal([]byte(d), &c))
			require.Equal(t, "text_completion", c.Object)
			if c.Usage != nil {
				u = c.Usage
				require.Empty(t, c.Choices)
				continue
			}
			text.WriteString(c.Choices[0].Text)
			if c.Choices[0].FinishReason != nil {
				finish = *c.Choices[0].FinishReason
			}
		}
		require.Equal(t, tok.Decode(wantToks), text.String())
		require.Equal(t, "length", finish)
		require.Equal(t, &Usage{PromptTokens: len(ids), CompletionTokens: 9, TotalTokens: len(ids) + 9}, u)
	})
}

func TestTokenLimits(t *testing.T) {
	s, _ := startServer(t, nil)
	capped, _ := startServer(t, func(o *Options) { o.MaxTokens = 3 })
	tests := []struct {
		name string
		s    *Server
		body string
		want int
	}{
		{"completion default", s, `{"model":"` + tinyID + `","temperature":0,"prompt":"x"}`, 256},
		{"completion asked", s, `{"model":"` + tinyID + `","temperature":0,"prompt":"x","max_tokens":7}`, 7},
		{"chat runs to the context", s, `{"model":"` + tinyID + `","temperature":0,"messages":[{"role":"user","content":"x"}]}`, -1},
		{"cap on completion default", capped, `{"model":"` + tinyID + `","temperature":0,"prompt":"x"}`, 3},
		{"cap on chat", capped, `{"model":"` + tinyID + `","temperature":0,"messages":[{"role":"user","content":"x"}],"max_tokens":50}`, 3},
		{"under the cap", capped, `{"model":"` + tinyID + `","temperature":0,"prompt":"x","max_tokens":2}`, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			decode := decodeCompletion
			if strings.Contains(tc.body, "messages") {
				decode = decodeChat
			}
			g, e := decode([]byte(tc.body), limits{modelID: tinyID, vocabSize: 1024})
			require.Nil(t, e)
			j, e := tc.s.plan(g)
			require.Nil(t, e)
			want := tc.want
			if want < 0 {
				want = tc.s.meta.contextLen - len(j.prompt)
			}
			require.Equal(t, want, j.maxNew)
		})
	}

	// A prompt that leaves no room in the context is refused before work.
	small, _ := startServer(t, nil)
	small.meta.contextLen = 8
	g, e := decodeCompletion([]byte(`{"model":"`+tinyID+`","temperature":0,"prompt":[1,2,3,4,5,6,7,8]}`), limits{modelID: tinyID, vocabSize: 1024})
	require.Nil(t, e)
	_, e = small.plan(g)
	require.NotNil(t, e)
	require.Equal(t, "context_length_exceeded", e.code)
	require.Equal(t, "prompt", e.param)
	g.promptIDs = g.promptIDs[:5]
	j, e := small.plan(g)
	require.Nil(t, e)
	require.Equal(t, 3, j.maxNew, "the default 256 shrinks to the room left")

	// And the cap holds end to end.
	_, base := startServer(t, func(o *Options) { o.MaxTokens = 3 })
	code, _, body := post(t, base+"/v1/completions", `{"model":"`+tinyID+`","temperature":0,"prompt":"x","max_tokens":50}`)
	require.Equal(t, http.StatusOK, code, string(body))
	var got Completion
	require.NoError(t, json.Unmarshal(body, &got))
	require.Equal(t, 3, got.Usage.CompletionTokens)
	require.Equal(t, "length", *got.Choices[0].FinishReason)
}

// TestEngineFailure: an engine error is a 500 in OpenAI's shape, or, once
// a stream has started, an error event (which OpenAI's SDKs raise) and
// [DONE]. A closed model is a real way for the engine to fail.
func TestEngineFailure(t *testing.T) {
	m, err := engine.Open(t.Context(), tinyDir, engine.Options{})
	require.NoError(t, err)
	_, tok := tiny(t)
	s, err := New(DefaultOptions(), FromEngine(m), tok)
	require.NoError(t, err)
	base := host(t, s)
	require.NoError(t, m.Close())

	code, _, body := post(t, base+"/v1/completions", `{"model":"`+tinyID+`","temperature":0,"prompt":[1,2],"max_tokens":2}`)
	require.Equal(t, http.StatusInternalServerError, code)
	e := decodeError(t, body)
	require.Equal(t, "server_error", e.Type)
	require.Equal(t, "generation_failed", *e.Code)
	require.Contains(t, e.Message, "closed")

	resp, next := stream(t, t.Context(), base+"/v1/chat/completions",
		`{"model":"`+tinyID+`","temperature":0,"messages":[{"role":"user","content":"hi"}],"max_tokens":2,"stream":true}`)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	data, _ := readAll(t, next)
	require.Len(t, data, 3, "role chunk, error event, [DONE]: %q", data)
	require.Equal(t, "generation_failed", *decodeError(t, []byte(data[1])).Code)
	require.Equal(t, "[DONE]", data[2])
	busy, _ := s.queue.counts()
	require.False(t, busy, "a failed generation frees the engine")
}
