package server

import (
	"errors"
	"net/http"
	"testing"

	"github.com/deltafin/deltafin/engine/chat"
	"github.com/stretchr/testify/require"
)

var testLimits = limits{modelID: "k3-tiny", vocabSize: 1024}

// tools declares one tool, f, in a request body.
const tools = `,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]`

func TestDecodeChatRefuses(t *testing.T) {
	const msgs = `"messages":[{"role":"user","content":"hi"}]`
	tests := []struct {
		name   string
		body   string
		param  string
		code   string
		status int
	}{
		{"empty body", ``, "", codeInvalidJSON, 400},
		{"not json", `{"model":`, "", codeInvalidJSON, 400},
		{"array body", `[1,2]`, "", codeInvalidValue, 400},
		{"trailing data", `{"model":"k3-tiny",` + msgs + `} {}`, "", codeInvalidJSON, 400},
		{"missing model", `{` + msgs + `}`, "model", codeMissing, 400},
		{"unknown field", `{"model":"k3-tiny",` + msgs + `,"frobnicate":1}`, "frobnicate", codeUnknown, 400},
		{"unknown message field", `{"model":"k3-tiny","messages":[{"role":"user","content":"hi","mood":"x"}]}`, "mood", codeUnknown, 400},
		{"unknown part field", `{"model":"k3-tiny","messages":[{"role":"user","content":[{"type":"text","text":"a","x":1}]}]}`, "messages[0].content[0].x", codeUnknown, 400},
		{"wrong type", `{"model":"k3-tiny",` + msgs + `,"max_tokens":"ten"}`, "max_tokens", codeInvalidValue, 400},
		{"no messages", `{"model":"k3-tiny","messages":[]}`, "messages", codeMissing, 400},
		{"n 2", `{"model":"k3-tiny",` + msgs + `,"n":2}`, "n", codeUnsupported, 400},
		{"n 0", `{"model":"k3-tiny",` + msgs + `,"n":0}`, "n", codeInvalidValue, 400},
		{"logprobs", `{"model":"k3-tiny",` + msgs + `,"logprobs":true}`, "logprobs", codeUnsupported, 400},
		{"top_logprobs", `{"model":"k3-tiny",` + msgs + `,"top_logprobs":3}`, "top_logprobs", codeUnsupported, 400},
		{"logit_bias", `{"model":"k3-tiny",` + msgs + `,"logit_bias":{"50256":-100}}`, "logit_bias", codeUnsupported, 400},
		{"presence_penalty", `{"model":"k3-tiny",` + msgs + `,"presence_penalty":0.5}`, "presence_penalty", codeUnsupported, 400},
		{"frequency_penalty", `{"model":"k3-tiny",` + msgs + `,"frequency_penalty":-1}`, "frequency_penalty", codeUnsupported, 400},
		{"penalty out of range", `{"model":"k3-tiny",` + msgs + `,"frequency_penalty":3}`, "frequency_penalty", codeInvalidValue, 400},
		{"five stops", `{"model":"k3-tiny",` + msgs + `,"stop":["a","b","c","d","e"]}`, "stop", codeInvalidValue, 400},
		{"empty stop", `{"model":"k3-tiny",` + msgs + `,"stop":["a",""]}`, "stop[1]", codeInvalidValue, 400},
		{"stop number", `{"model":"k3-tiny",` + msgs + `,"stop":3}`, "stop", codeInvalidValue, 400},
		{"tool_choice required without tools", `{"model":"k3-tiny",` + msgs + `,"tool_choice":"required"}`, "tool_choice", codeInvalidValue, 400},
		{"tool_choice names no tool", `{"model":"k3-tiny",` + msgs + tools + `,"tool_choice":{"type":"function","function":{"name":"g"}}}`, "tool_choice.function.name", codeInvalidValue, 400},
		{"tool_choice unknown field", `{"model":"k3-tiny",` + msgs + tools + `,"tool_choice":{"type":"function","function":{"name":"f"},"x":1}}`, "tool_choice.x", codeUnknown, 400},
		{"tool_choice type", `{"model":"k3-tiny",` + msgs + tools + `,"tool_choice":{"type":"custom","function":{"name":"f"}}}`, "tool_choice.type", codeInvalidValue, 400},
		{"tool declared twice", `{"model":"k3-tiny",` + msgs + `,"tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"f"}}]}`, "tools[1].function.name", codeInvalidValue, 400},
		{"tool parameters not an object", `{"model":"k3-tiny",` + msgs + `,"tools":[{"type":"function","function":{"name":"f","parameters":[1]}}]}`, "tools[0].function.parameters", codeInvalidValue, 400},
		{"parallel_tool_calls type", `{"model":"k3-tiny",` + msgs + `,"parallel_tool_calls":"no"}`, "parallel_tool_calls", codeInvalidValue, 400},
		{"json_schema missing", `{"model":"k3-tiny",` + msgs + `,"response_format":{"type":"json_schema"}}`, "response_format.json_schema", codeMissing, 400},
		{"json_schema name", `{"model":"k3-tiny",` + msgs + `,"response_format":{"type":"json_schema","json_schema":{"name":"a b"}}}`, "response_format.json_schema.name", codeInvalidValue, 400},
		{"json_schema unknown field", `{"model":"k3-tiny",` + msgs + `,"response_format":{"type":"json_schema","json_schema":{"name":"x","mode":1}}}`, "response_format.json_schema.mode", codeUnknown, 400},
		{"json_schema not an object", `{"model":"k3-tiny",` + msgs + `,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":true}}}`, "response_format.json_schema.schema", codeInvalidValue, 400},
		{"strict schema invalid", `{"model":"k3-tiny",` + msgs + `,"response_format":{"type":"json_schema","json_schema":{"name":"x","strict":true,"schema":{"type":5}}}}`, "response_format.json_schema.schema", codeInvalidValue, 400},
		{"strict schema reads no files", `{"model":"k3-tiny",` + msgs + `,"response_format":{"type":"json_schema","json_schema":{"name":"x","strict":true,"schema":{"$ref":"file:///etc/passwd"}}}}`, "response_format.json_schema.schema", codeInvalidValue, 400},
		{"json_object with a schema", `{"model":"k3-tiny",` + msgs + `,"response_format":{"type":"json_object","json_schema":{"name":"x"}}}`, "response_format.json_schema", codeInvalidValue, 400},
		{"response_format type", `{"model":"k3-tiny",` + msgs + `,"response_format":{"type":"yaml"}}`, "response_format.type", codeInvalidValue, 400},
		{"tool_choice bogus", `{"model":"k3-tiny",` + msgs + `,"tool_choice":"sometimes"}`, "tool_choice", codeInvalidValue, 400},
		{"image part", `{"model":"k3-tiny","messages":[{"role":"user","content":[{"type":"text","text":"see"},{"type":"image_url","image_url":{"url":"data:x"}}]}]}`, "messages[0].content[1]", codeUnsupported, 400},
		{"audio part", `{"model":"k3-tiny","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"x","format":"wav"}}]}]}`, "messages[0].content[0]", codeUnsupported, 400},
		{"unknown part", `{"model":"k3-tiny","messages":[{"role":"user","content":[{"type":"video"}]}]}`, "messages[0].content[0].type", codeInvalidValue, 400},
		{"temperature high", `{"model":"k3-tiny",` + msgs + `,"temperature":2.5}`, "temperature", codeInvalidValue, 400},
		{"temperature negative", `{"model":"k3-tiny",` + msgs + `,"temperature":-0.1}`, "temperature", codeInvalidValue, 400},
		{"top_p high", `{"model":"k3-tiny",` + msgs + `,"top_p":1.5}`, "top_p", codeInvalidValue, 400},
		{"max_tokens zero", `{"model":"k3-tiny",` + msgs + `,"max_tokens":0}`, "max_tokens", codeInvalidValue, 400},
		{"max tokens disagree", `{"model":"k3-tiny",` + msgs + `,"max_tokens":5,"max_completion_tokens":6}`, "max_completion_tokens", codeInvalidValue, 400},
		{"stream_options without stream", `{"model":"k3-tiny",` + msgs + `,"stream_options":{"include_usage":true}}`, "stream_options", codeInvalidValue, 400},
		{"effort unknown", `{"model":"k3-tiny",` + msgs + `,"reasoning_effort":"huge"}`, "reasoning_effort", codeInvalidValue, 400},
		{"thinking disabled with effort", `{"model":"k3-tiny",` + msgs + `,"thinking":{"type":"disabled","effort":"high"}}`, "thinking.effort", codeInvalidValue, 400},
		{"thinking type unknown", `{"model":"k3-tiny",` + msgs + `,"thinking":{"type":"on"}}`, "thinking.type", codeInvalidValue, 400},
		{"thinking keep unknown", `{"model":"k3-tiny",` + msgs + `,"thinking":{"keep":"last"}}`, "thinking.keep", codeInvalidValue, 400},
		{"thinking unknown field", `{"model":"k3-tiny",` + msgs + `,"thinking":{"depth":3}}`, "depth", codeUnknown, 400},
		{"kwargs off with effort", `{"model":"k3-tiny",` + msgs + `,"chat_template_kwargs":{"thinking":false,"thinking_effort":"low"}}`, "chat_template_kwargs.thinking_effort", codeInvalidValue, 400},
		{"kwargs effort none", `{"model":"k3-tiny",` + msgs + `,"chat_template_kwargs":{"thinking_effort":"none"}}`, "chat_template_kwargs.thinking_effort", codeInvalidValue, 400},
		{"kwargs preserve not bool", `{"model":"k3-tiny",` + msgs + `,"chat_template_kwargs":{"preserve_thinking":"yes"}}`, "chat_template_kwargs.preserve_thinking", codeInvalidValue, 400},
		{"template kwarg unknown", `{"model":"k3-tiny",` + msgs + `,"chat_template_kwargs":{"foo":1}}`, "chat_template_kwargs.foo", codeUnknown, 400},
		{"bad role", `{"model":"k3-tiny","messages":[{"role":"robot","content":"x"}]}`, "messages[0].role", codeInvalidValue, 400},
		{"no role", `{"model":"k3-tiny","messages":[{"content":"x"}]}`, "messages[0].role", codeMissing, 400},
		{"user without content", `{"model":"k3-tiny","messages":[{"role":"user"}]}`, "messages[0].content", codeMissing, 400},
		{"content object", `{"model":"k3-tiny","messages":[{"role":"user","content":{"a":1}}]}`, "messages[0].content", codeInvalidValue, 400},
		{"tool without id", `{"model":"k3-tiny","messages":[{"role":"tool","content":"x"}]}`, "messages[0].tool_call_id", codeMissing, 400},
		{"user reasoning", `{"model":"k3-tiny","messages":[{"role":"user","content":"x","reasoning_content":"y"}]}`, "messages[0].reasoning_content", codeInvalidValue, 400},
		{"tool call type", `{"model":"k3-tiny","messages":[{"role":"assistant","tool_calls":[{"id":"1","type":"x","function":{"name":"f","arguments":"{}"}}]}]}`, "messages[0].tool_calls[0].type", codeInvalidValue, 400},
		{"tool no name", `{"model":"k3-tiny",` + msgs + `,"tools":[{"type":"function","function":{}}]}`, "tools[0].function.name", codeMissing, 400},
		{"audio modality", `{"model":"k3-tiny",` + msgs + `,"modalities":["text","audio"]}`, "modalities[1]", codeUnsupported, 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, e := decodeChat([]byte(tc.body), testLimits)
			require.Nil(t, g)
			require.NotNil(t, e)
			require.Equal(t, tc.status, e.status, e.msg)
			require.Equal(t, tc.param, e.param, e.msg)
			require.Equal(t, tc.code, e.code, e.msg)
			require.NotEmpty(t, e.msg)
			if tc.status == http.StatusBadRequest {
				require.True(t, errors.Is(e, ErrInvalidRequest))
			}
		})
	}
}

func TestDecodeChatAccepts(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		check func(t *testing.T, g *genRequest)
	}{
		{"minimal", `{"model":"k3-tiny","messages":[{"role":"user","content":"hi"}]}`, func(t *testing.T, g *genRequest) {
			require.True(t, g.chat)
			require.True(t, g.thinking)
			require.Equal(t, "", g.effort)
			require.Equal(t, 0, g.maxTokens)
			require.False(t, g.stream)
			require.Equal(t, []message{{role: "user", content: "hi"}}, g.messages)
		}},
		{"ignored sampling fields", `{"model":"k3-tiny","messages":[{"role":"user","content":"hi"}],"temperature":0.7,"top_p":0.9,"n":1,"seed":4,"user":"u","presence_penalty":0,"frequency_penalty":0,"logprobs":false,"top_logprobs":0,"logit_bias":{},"stop":null,"store":false,"metadata":{"a":"b"},"parallel_tool_calls":true,"tool_choice":"auto","response_format":{"type":"text"},"modalities":["text"]}`, func(t *testing.T, g *genRequest) {
			require.Len(t, g.messages, 1)
		}},
		{"tool_choice required", `{"model":"k3-tiny","messages":[{"role":"user","content":"hi"}]` + tools + `,"tool_choice":"required","parallel_tool_calls":false}`, func(t *testing.T, g *genRequest) {
			require.Equal(t, "required", g.toolChoice)
			require.Empty(t, g.toolName)
			require.False(t, g.parallel)
			require.Equal(t, 1, g.parseOptions("id").MaxCalls)
		}},
		{"tool_choice named", `{"model":"k3-tiny","messages":[{"role":"user","content":"hi"}]` + tools + `,"tool_choice":{"type":"function","function":{"name":"f"}}}`, func(t *testing.T, g *genRequest) {
			require.Equal(t, "f", g.toolName)
			require.True(t, g.parallel)
			o := chatOptions(g)
			require.Equal(t, "f", o.ToolName)
		}},
		{"json_object", `{"model":"k3-tiny","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_object"}}`, func(t *testing.T, g *genRequest) {
			require.Equal(t, &chat.ResponseFormat{Type: "json_object"}, g.format)
			require.Nil(t, g.check(`{"a":1}`))
			require.Equal(t, finishInvalidJSON, g.check(`{"a":`).Code)
		}},
		{"json_schema strict", `{"model":"k3-tiny","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"x","description":"d","strict":true,
			"schema":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}}}}`, func(t *testing.T, g *genRequest) {
			require.Equal(t, "json_schema", g.format.Type)
			require.JSONEq(t, `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}`, string(g.format.Schema))
			require.Nil(t, g.check(`{"n":3}`))
			require.Equal(t, finishSchemaMismatch, g.check(`{"n":"3"}`).Code)
			require.Equal(t, finishSchemaMismatch, g.check(`{"n":3,"m":1}`).Code)
			require.Equal(t, finishInvalidJSON, g.check(`n=3`).Code)
		}},
		{"json_schema not strict is not checked", `{"model":"k3-tiny","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object"}}}}`, func(t *testing.T, g *genRequest) {
			require.Equal(t, "json_schema", g.format.Type)
			require.Nil(t, g.check)
		}},
		{"empty stop list", `{"model":"k3-tiny","messages":[{"role":"user","content":"hi"}],"stop":[]}`, nil},
		{"stream with usage", `{"model":"k3-tiny","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}}`, func(t *testing.T, g *genRequest) {
			require.True(t, g.stream)
			require.True(t, g.includeUsage)
		}},
		{"max_completion_tokens", `{"model":"k3-tiny","messages":[{"role":"user","content":"hi"}],"max_completion_tokens":7}`, func(t *testing.T, g *genRequest) {
			require.Equal(t, 7, g.maxTokens)
		}},
		{"effort low", `{"model":"k3-tiny","messages":[{"role":"user","content":"hi"}],"reasoning_effort":"low"}`, func(t *testing.T, g *genRequest) {
			require.True(t, g.thinking)
			require.Equal(t, "low", g.effort)
		}},
		{"effort none", `{"model":"k3-tiny","messages":[{"role":"user","content":"hi"}],"reasoning_effort":"none"}`, func(t *testing.T, g *genRequest) {
			require.False(t, g.thinking)
		}},
		{"thinking kwarg off", `{"model":"k3-tiny","messages":[{"role":"user","content":"hi"}],"chat_template_kwargs":{"thinking":false}}`, func(t *testing.T, g *genRequest) {
			require.False(t, g.thinking)
		}},
		{"conversation", `{"model":"k3-tiny","messages":[
			{"role":"developer","content":"be terse"},
			{"role":"user","name":"alice","content":[{"type":"text","text":"a, "},{"type":"text","text":"b"}]},
			{"role":"assistant","content":null,"reasoning_content":"think","refusal":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}}]},
			{"role":"tool","tool_call_id":"c1","content":"42"}],
			"tools":[{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object"}}}]}`, func(t *testing.T, g *genRequest) {
			require.Equal(t, []message{
				{role: "system", content: "be terse"},
				{role: "user", name: "alice", content: "a, b", parts: []string{"a, ", "b"}},
				{role: "assistant", reasoning: "think", toolCalls: []toolCall{{id: "c1", name: "f", arguments: `{"x":1}`}}},
				{role: "tool", toolCallID: "c1", content: "42"},
			}, g.messages)
			require.Len(t, g.tools, 1)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, e := decodeChat([]byte(tc.body), testLimits)
			require.Nil(t, e)
			require.NotNil(t, g)
			if tc.check != nil {
				tc.check(t, g)
			}
		})
	}
}

func TestDecodeCompletion(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		param string // "" = accepted
		code  string
		text  string
		ids   []int
		max   int
	}{
		{name: "string", body: `{"model":"k3-tiny","prompt":"Once"}`, text: "Once", max: 256},
		{name: "one string in array", body: `{"model":"k3-tiny","prompt":["Once"],"max_tokens":3}`, text: "Once", max: 3},
		{name: "ids", body: `{"model":"k3-tiny","prompt":[1,2,1023]}`, ids: []int{1, 2, 1023}, max: 256},
		{name: "nested ids", body: `{"model":"k3-tiny","prompt":[[5,6]]}`, ids: []int{5, 6}, max: 256},
		{name: "ignored fields", body: `{"model":"k3-tiny","prompt":"x","temperature":0,"top_p":1,"n":1,"best_of":1,"echo":false,"suffix":"","seed":1,"user":"u","stream":false}`, text: "x", max: 256},
		{name: "no prompt", body: `{"model":"k3-tiny"}`, param: "prompt", code: codeMissing},
		{name: "empty prompt", body: `{"model":"k3-tiny","prompt":""}`, param: "prompt", code: codeInvalidValue},
		{name: "empty ids", body: `{"model":"k3-tiny","prompt":[]}`, param: "prompt", code: codeInvalidValue},
		{name: "two prompts", body: `{"model":"k3-tiny","prompt":["a","b"]}`, param: "prompt", code: codeUnsupported},
		{name: "id out of range", body: `{"model":"k3-tiny","prompt":[1,1024]}`, param: "prompt[1]", code: codeInvalidValue},
		{name: "negative id", body: `{"model":"k3-tiny","prompt":[[-1]]}`, param: "prompt[0][0]", code: codeInvalidValue},
		{name: "fractional id", body: `{"model":"k3-tiny","prompt":[1.5,2]}`, param: "prompt[0]", code: codeInvalidValue},
		{name: "prompt object", body: `{"model":"k3-tiny","prompt":{}}`, param: "prompt", code: codeInvalidValue},
		{name: "best_of", body: `{"model":"k3-tiny","prompt":"x","best_of":3}`, param: "best_of", code: codeUnsupported},
		{name: "echo", body: `{"model":"k3-tiny","prompt":"x","echo":true}`, param: "echo", code: codeUnsupported},
		{name: "suffix", body: `{"model":"k3-tiny","prompt":"x","suffix":"end"}`, param: "suffix", code: codeUnsupported},
		{name: "logprobs", body: `{"model":"k3-tiny","prompt":"x","logprobs":2}`, param: "logprobs", code: codeUnsupported},
		{name: "stop", body: `{"model":"k3-tiny","prompt":"x","stop":[".","a","b","c","d"]}`, param: "stop", code: codeInvalidValue},
		{name: "n", body: `{"model":"k3-tiny","prompt":"x","n":4}`, param: "n", code: codeUnsupported},
		{name: "unknown", body: `{"model":"k3-tiny","prompt":"x","messages":[]}`, param: "messages", code: codeUnknown},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, e := decodeCompletion([]byte(tc.body), testLimits)
			if tc.param != "" {
				require.Nil(t, g)
				require.NotNil(t, e)
				require.Equal(t, tc.param, e.param, e.msg)
				require.Equal(t, tc.code, e.code, e.msg)
				return
			}
			require.Nil(t, e)
			require.False(t, g.chat)
			require.Equal(t, tc.text, g.prompt)
			require.Equal(t, tc.ids, g.promptIDs)
			require.Equal(t, tc.max, g.maxTokens)
		})
	}
}

// FuzzDecodeRequest feeds arbitrary bodies to both decoders: they must
// return a request or a 4xx error with a message, never panic, and an
// accepted request must satisfy the invariants the handlers rely on.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"k3-tiny","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"k3-tiny","messages":[{"role":"user","content":[{"type":"text","text":"a"}]}],"stream":true,"stream_options":{"include_usage":true}}`,
		`{"model":"k3-tiny","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"1","content":"x"}]}`,
		`{"model":"k3-tiny","prompt":[1,2,3],"max_tokens":4}`,
		`{"model":"k3-tiny","prompt":[[1,2,3]]}`,
		`{"model":"k3-tiny","prompt":"x","stop":[]}`,
		`{"model":"k3-tiny","messages":[],"reasoning_effort":"none","chat_template_kwargs":{"thinking":true}}`,
		`[`, `null`, `{}`, `{"model":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, decode := range []func([]byte, limits) (*genRequest, *apiError){decodeChat, decodeCompletion} {
			g, e := decode(body, testLimits)
			if e != nil {
				require.Nil(t, g)
				require.True(t, e.status == 400 || e.status == 404, e.status)
				require.NotEmpty(t, e.msg)
				continue
			}
			require.NotNil(t, g)
			require.GreaterOrEqual(t, g.maxTokens, 0)
			if g.chat {
				require.NotEmpty(t, g.messages)
				require.Contains(t, []string{"", "low", "high", "max"}, g.effort)
				for _, m := range g.messages {
					require.Contains(t, []string{"system", "user", "assistant", "tool"}, m.role)
				}
			} else {
				require.Positive(t, g.maxTokens)
				require.True(t, g.prompt != "" || len(g.promptIDs) > 0)
				for _, id := range g.promptIDs {
					require.True(t, id >= 0 && id < testLimits.vocabSize)
				}
			}
			require.True(t, !g.includeUsage || g.stream)
		}
	})
}
