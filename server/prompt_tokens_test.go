package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/deltafin/deltafin/chat"
	"github.com/stretchr/testify/require"
)

// usage.prompt_tokens (input_tokens on the Responses API) is the rendered
// prompt's token count exactly: Moonshot's vendor verifier checks it
// against fixed constants. Here the count is made apart from the server:
// K3's renderer (chat), then every segment encoded on its own by
// tokenizer, the trusted ones with specials (K3-ARCHITECTURE §7.2:
// segment boundaries are part of the token contract).
func renderedCount(t *testing.T, msgs []chat.Message, opts chat.Options) int {
	t.Helper()
	_, tok := tiny(t)
	segs, err := chat.Render(msgs, opts)
	require.NoError(t, err)
	n := 0
	for _, s := range segs {
		if s.Control {
			n += len(tok.EncodeSpecial(s.Text))
		} else {
			n += len(tok.Encode(s.Text))
		}
	}
	return n
}

const usageWeatherTool = `{"type":"function","function":{"name":"get_weather","description":"Weather for a city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}`

func TestChatPromptTokensAreTheRenderedCount(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, nil) // memo on: the replay must count the same
	thinkingOff := chat.Options{Thinking: false}
	low := chat.DefaultOptions()
	low.Effort = "low"
	tools := chat.DefaultOptions()
	tools.Tools = []chat.Tool{chat.Tool(usageWeatherTool)}
	tools.ToolChoice = "auto"
	cases := []struct {
		name string
		body string // the request's fields after model and max_tokens
		msgs []chat.Message
		opts chat.Options
	}{
		{"user", `"messages":[{"role":"user","content":"What is the capital of France?"}]`,
			[]chat.Message{{Role: "user", Content: "What is the capital of France?"}}, chat.DefaultOptions()},
		{"system, thinking off", `"reasoning_effort":"none","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Name three rivers."}]`,
			[]chat.Message{{Role: "system", Content: "You are terse."}, {Role: "user", Content: "Name three rivers."}}, thinkingOff},
		{"multi-turn, effort low", `"reasoning_effort":"low","messages":[{"role":"user","content":"Hi"},{"role":"assistant","reasoning_content":"Greet back.","content":"Hello! How can I help?"},{"role":"user","content":"Tell me a joke about   spaces\n\nand lines."}]`,
			[]chat.Message{{Role: "user", Content: "Hi"}, {Role: "assistant", ReasoningContent: "Greet back.", Content: "Hello! How can I help?"},
				{Role: "user", Content: "Tell me a joke about   spaces\n\nand lines."}}, low},
		{"tools, call and result", `"tools":[` + usageWeatherTool + `],"tool_choice":"auto","messages":[{"role":"system","content":"Use tools."},{"role":"user","content":"Weather in Paris?"},{"role":"assistant","content":"","reasoning_content":"Call the tool.","tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},{"role":"tool","tool_call_id":"call_1","content":"sunny, 21 °C"}]`,
			[]chat.Message{{Role: "system", Content: "Use tools."}, {Role: "user", Content: "Weather in Paris?"},
				{Role: "assistant", ReasoningContent: "Call the tool.", ToolCalls: []chat.ToolCall{{ID: "call_1", Type: "function",
					Function: chat.FunctionCall{Name: "get_weather", Arguments: `{"city":"Paris"}`}}}},
				{Role: "tool", ToolCallID: "call_1", Content: "sunny, 21 °C"}}, tools},
		{"names, parts, literal markers", `"messages":[{"role":"user","name":"alice","content":[{"type":"text","text":"Hello <|open|> & "},{"type":"text","text":"goodbye [BOS]<|end_of_msg|>"}]}]`,
			[]chat.Message{{Role: "user", Name: "alice", Parts: []chat.Part{{Type: "text", Text: "Hello <|open|> & "}, {Type: "text", Text: "goodbye [BOS]<|end_of_msg|>"}}}},
			chat.DefaultOptions()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := renderedCount(t, c.msgs, c.opts)
			body := fmt.Sprintf(`{"model":%q,"temperature":0,"max_tokens":3,%s}`, tinyID, c.body)
			for _, round := range []string{"generated", "replayed from the memo"} {
				code, _, b := post(t, base+"/v1/chat/completions", body)
				require.Equal(t, http.StatusOK, code, string(b))
				var got ChatCompletion
				require.NoError(t, json.Unmarshal(b, &got))
				require.Equal(t, want, got.Usage.PromptTokens, round)
				require.Equal(t, want+got.Usage.CompletionTokens, got.Usage.TotalTokens, round)
			}
			u := streamedChatUsage(t, base+"/v1/chat/completions", body[:len(body)-1]+`,"stream":true,"stream_options":{"include_usage":true}}`)
			require.Equal(t, want, u.PromptTokens, "streamed")
		})
	}

	// A second turn built on the server's own answer counts the whole
	// conversation. (A turn the kept session continues runs only its new
	// tail and still counts it all: TestConversationReuse.)
	first := `{"role":"user","content":"Write a long story about a lighthouse keeper."}`
	code, _, b := post(t, base+"/v1/chat/completions", fmt.Sprintf(`{"model":%q,"temperature":0,"max_tokens":6,"reasoning_effort":"none","messages":[%s]}`, tinyID, first))
	require.Equal(t, http.StatusOK, code, string(b))
	var got ChatCompletion
	require.NoError(t, json.Unmarshal(b, &got))
	answer := got.Choices[0].Message.Content
	msgs := []chat.Message{{Role: "user", Content: "Write a long story about a lighthouse keeper."}, {Role: "assistant", Content: answer},
		{Role: "user", Content: "Go on."}}
	turn, err := json.Marshal(answer)
	require.NoError(t, err)
	code, _, b = post(t, base+"/v1/chat/completions", fmt.Sprintf(`{"model":%q,"temperature":0,"max_tokens":3,"reasoning_effort":"none","messages":[%s,{"role":"assistant","content":%s},{"role":"user","content":"Go on."}]}`, tinyID, first, turn))
	require.Equal(t, http.StatusOK, code, string(b))
	require.NoError(t, json.Unmarshal(b, &got))
	require.Equal(t, renderedCount(t, msgs, thinkingOff), got.Usage.PromptTokens, "continued conversation")
}

// streamedChatUsage reads a chat stream to its end and returns the usage
// of its last chunk.
func streamedChatUsage(t *testing.T, url, body string) Usage {
	t.Helper()
	resp, next := stream(t, t.Context(), url, body)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	data, _ := readAll(t, next)
	require.GreaterOrEqual(t, len(data), 2)
	require.Equal(t, "[DONE]", data[len(data)-1])
	var last struct{ Usage *Usage }
	require.NoError(t, json.Unmarshal([]byte(data[len(data)-2]), &last))
	require.NotNil(t, last.Usage, data[len(data)-2])
	return *last.Usage
}

func TestCompletionPromptTokensAreTheEncodedCount(t *testing.T) {
	t.Parallel()
	_, tok := tiny(t)
	_, base := startServer(t, nil)
	for _, prompt := range []string{"The capital of France is", "Literal <|open|>markers[BOS] stay text,\r\n\tand   whitespace runs   \n\n", "北京 Москва 😀 x_1, x_2, …"} {
		want := len(tok.Encode(prompt))
		p, err := json.Marshal(prompt)
		require.NoError(t, err)
		body := fmt.Sprintf(`{"model":%q,"temperature":0,"max_tokens":3,"prompt":%s}`, tinyID, p)
		code, _, b := post(t, base+"/v1/completions", body)
		require.Equal(t, http.StatusOK, code, string(b))
		var got Completion
		require.NoError(t, json.Unmarshal(b, &got))
		require.NotNil(t, got.Usage)
		require.Equal(t, want, got.Usage.PromptTokens, prompt)
		u := streamedChatUsage(t, base+"/v1/completions", body[:len(body)-1]+`,"stream":true,"stream_options":{"include_usage":true}}`)
		require.Equal(t, want, u.PromptTokens, "streamed %q", prompt)
	}
}

func TestResponsesInputTokensAreTheRenderedCount(t *testing.T) {
	t.Parallel()
	_, withSt := withStore(t)
	_, base := startServer(t, withSt)
	create := func(body string) Response {
		t.Helper()
		code, _, b := post(t, base+"/v1/responses", body)
		require.Equal(t, http.StatusOK, code, string(b))
		return decodeResponse(t, b)
	}
	noThinking := chat.Options{Thinking: false}
	low := chat.DefaultOptions()
	low.Effort = "low"
	tools := chat.DefaultOptions()
	tools.Tools = []chat.Tool{chat.Tool(usageWeatherTool)}
	tools.ToolChoice = "auto"
	respTool := `{"type":"function","name":"get_weather","description":"Weather for a city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}`

	cases := []struct {
		name string
		body string
		msgs []chat.Message
		opts chat.Options
	}{
		{"instructions and a string", `"instructions":"You are terse.","input":"What is the capital of France?"`,
			[]chat.Message{{Role: "system", Content: "You are terse."}, {Role: "user", Content: "What is the capital of France?"}}, chat.DefaultOptions()},
		{"items, multi-turn, effort low", `"reasoning":{"effort":"low"},"input":[{"role":"developer","content":"Answer in French."},{"role":"user","content":"Hi"},{"type":"reasoning","content":[{"type":"reasoning_text","text":"Greet back."}]},{"role":"assistant","content":[{"type":"output_text","text":"Bonjour !"}]},{"role":"user","content":[{"type":"input_text","text":"Et <|open|> alors ?"}]}]`,
			[]chat.Message{{Role: "system", Content: "Answer in French."}, {Role: "user", Content: "Hi"},
				{Role: "assistant", ReasoningContent: "Greet back.", Content: "Bonjour !"}, {Role: "user", Content: "Et <|open|> alors ?"}}, low},
		{"tools, call and output", `"tools":[` + respTool + `],"input":[{"role":"user","content":"Weather in Paris?"},{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},{"type":"function_call_output","call_id":"call_1","output":"sunny"}]`,
			[]chat.Message{{Role: "user", Content: "Weather in Paris?"},
				{Role: "assistant", ToolCalls: []chat.ToolCall{{ID: "call_1", Type: "function", Function: chat.FunctionCall{Name: "get_weather", Arguments: `{"city":"Paris"}`}}}},
				{Role: "tool", ToolCallID: "call_1", Content: "sunny"}}, tools},
		{"thinking off", `"reasoning":{"effort":"none"},"input":"Name three rivers."`,
			[]chat.Message{{Role: "user", Content: "Name three rivers."}}, noThinking},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := renderedCount(t, c.msgs, c.opts)
			body := fmt.Sprintf(`{"model":%q,"temperature":0,"max_output_tokens":3,%s}`, tinyID, c.body)
			r := create(body)
			require.NotNil(t, r.Usage)
			require.Equal(t, want, r.Usage.InputTokens)
			require.Equal(t, want+r.Usage.OutputTokens, r.Usage.TotalTokens)

			code, _, b := post(t, base+"/v1/responses", body[:len(body)-1]+`,"stream":true}`)
			require.Equal(t, http.StatusOK, code, string(b))
			events := parseNamed(t, string(b))
			final := events[len(events)-1].Response
			require.NotNil(t, final)
			require.NotNil(t, final.Usage)
			require.Equal(t, want, final.Usage.InputTokens, "streamed")
		})
	}

	// previous_response_id: the earlier turn, its answer as the
	// assistant's, then the new input, all counted.
	first := create(fmt.Sprintf(`{"model":%q,"temperature":0,"max_output_tokens":5,"input":"Write a long story about a lighthouse keeper."}`, tinyID))
	reasoning, content := outputText(first)
	second := create(fmt.Sprintf(`{"model":%q,"temperature":0,"max_output_tokens":3,"previous_response_id":%q,"input":"Go on."}`, tinyID, first.ID))
	msgs := []chat.Message{{Role: "user", Content: "Write a long story about a lighthouse keeper."},
		{Role: "assistant", ReasoningContent: reasoning, Content: content}, {Role: "user", Content: "Go on."}}
	require.NotNil(t, second.Usage)
	require.Equal(t, renderedCount(t, msgs, chat.DefaultOptions()), second.Usage.InputTokens, "previous_response_id")
	require.True(t, strings.HasPrefix(second.ID, "resp_"))
}
