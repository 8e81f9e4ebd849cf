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

// Tool calls over HTTP. k3-tiny's random weights never write a tools block
// on their own, so the tests of a well-formed call prime the server's
// exact-response memo with the token ids of an assistant turn that the K3
// renderer writes (what K3 would generate): the request then runs the real
// output path (parser, JSON, SSE) on real tokens. The forced tool_choice
// tests run the engine itself and check what comes out against a direct
// run.

const weatherTool = `{"type":"function","function":{"name":"get_weather","description":"Weather for a city","parameters":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city"]}}}`

// turnTokens renders msgs, then msgs with reply appended, and returns the
// token ids of the reply turn as the model would generate them (without
// the stop token).
func turnTokens(t *testing.T, msgs []chat.Message, reply chat.Message, opts chat.Options) []int {
	t.Helper()
	_, tok := tiny(t)
	head, err := chat.Prompt(tok, msgs, opts)
	require.NoError(t, err)
	full := opts
	full.NoGenerationPrompt = true
	all, err := chat.Prompt(tok, append(append([]chat.Message{}, msgs...), reply), full)
	require.NoError(t, err)
	require.Equal(t, head, all[:len(head)])
	return all[len(head) : len(all)-1]
}

// prime stores tokens as the memo's answer to body.
func prime(t *testing.T, s *Server, body string, tokens []int, finish string) {
	t.Helper()
	g, ae := decodeChat([]byte(body), limits{modelID: s.meta.id, vocabSize: s.meta.vocabSize})
	require.Nil(t, ae)
	j, ae := s.plan(g)
	require.Nil(t, ae)
	s.memo.put(j.key, memoValue{tokens: tokens, finish: finish})
}

// weatherCalls is a turn with two calls: typed arguments, and a string that
// is not JSON (rendered raw in a json block).
var weatherCalls = chat.Message{Role: "assistant", ReasoningContent: "Call the tool.", ToolCalls: []chat.ToolCall{
	{ID: "x", Type: "function", Function: chat.FunctionCall{Name: "get_weather", Arguments: `{"city":"Paris","days":2}`}},
	{ID: "y", Type: "function", Function: chat.FunctionCall{Name: "get_weather", Arguments: `city=Lyon`}},
}}

func weatherBody(extra string) string {
	return `{"model":"` + tinyID + `","temperature":0,"messages":[{"role":"user","content":"Weather in Paris?"}],"max_tokens":64,"tools":[` + weatherTool + `]` + extra + `}`
}

func weatherOptions() chat.Options {
	o := chat.DefaultOptions()
	o.Tools = []chat.Tool{chat.Tool(weatherTool)}
	return o
}

// streamedChat posts a streaming request and returns its chunks (without
// [DONE]).
func streamedChat(t *testing.T, base, body string) []ChatChunk {
	t.Helper()
	resp, next := stream(t, t.Context(), base+"/v1/chat/completions", strings.Replace(body, `{`, `{"stream":true,`, 1))
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	data, _ := readAll(t, next)
	require.Equal(t, "[DONE]", data[len(data)-1])
	var chunks []ChatChunk
	for _, d := range data[:len(data)-1] {
		var c ChatChunk
		require.NoError(t, json.Unmarshal([]byte(d), &c), d)
		chunks = append(chunks, c)
	}
	return chunks
}

// streamed is what a client accumulates from chunks, checking that every
// tool call streams as OpenAI streams it: a first delta with index, id,
// type and name (and maybe the first arguments), then only argument
// fragments, calls in order.
type streamed struct {
	reasoning, content string
	calls              []ChatToolCall
	finish             string
	outputError        *OutputError
}

func accumulate(t *testing.T, chunks []ChatChunk) streamed {
	t.Helper()
	var s streamed
	for i, c := range chunks {
		require.Len(t, c.Choices, 1)
		ch := c.Choices[0]
		d := ch.Delta
		if d.ReasoningContent != nil {
			s.reasoning += *d.ReasoningContent
		}
		if d.Content != nil {
			s.content += *d.Content
		}
		for _, tc := range d.ToolCalls {
			if tc.Index == len(s.calls) {
				require.Regexp(t, `^call_[0-9a-f]{24}$`, tc.ID, "chunk %d: a call's first delta carries its id", i)
				require.Equal(t, "function", tc.Type)
				require.NotEmpty(t, tc.Function.Name)
				s.calls = append(s.calls, ChatToolCall{ID: tc.ID, Type: tc.Type, Function: FunctionCall{Name: tc.Function.Name, Arguments: tc.Function.Arguments}})
				continue
			}
			require.Equal(t, len(s.calls)-1, tc.Index, "chunk %d: fragments only for the current call", i)
			require.Empty(t, tc.ID)
			require.Empty(t, tc.Type)
			require.Empty(t, tc.Function.Name)
			require.NotEmpty(t, tc.Function.Arguments)
			s.calls[tc.Index].Function.Arguments += tc.Function.Arguments
		}
		if ch.FinishReason != nil {
			require.Equal(t, len(chunks)-1, i, "the finish reason comes last")
			s.finish, s.outputError = *ch.FinishReason, ch.OutputError
		} else {
			require.Nil(t, ch.OutputError)
		}
	}
	return s
}

func chatAnswer(t *testing.T, base, body string) ChatChoice {
	t.Helper()
	code, _, raw := post(t, base+"/v1/chat/completions", body)
	require.Equal(t, http.StatusOK, code, string(raw))
	var got ChatCompletion
	require.NoError(t, json.Unmarshal(raw, &got))
	require.Len(t, got.Choices, 1)
	return got.Choices[0]
}

func requireJSONEqual(t *testing.T, want, got string) {
	t.Helper()
	var w, g any
	require.NoError(t, json.Unmarshal([]byte(want), &w))
	require.NoError(t, json.Unmarshal([]byte(got), &g), got)
	require.Equal(t, w, g)
}

func TestToolCallsAnswer(t *testing.T) {
	s, base := startServer(t, nil)
	tokens := turnTokens(t, []chat.Message{{Role: "user", Content: "Weather in Paris?"}}, weatherCalls, weatherOptions())
	for _, parallel := range []string{"", `,"parallel_tool_calls":false`} {
		t.Run("parallel"+parallel, func(t *testing.T) {
			body := weatherBody(parallel)
			prime(t, s, body, tokens, "stop")
			ch := chatAnswer(t, base, body)
			require.Equal(t, "tool_calls", ch.FinishReason)
			require.Nil(t, ch.OutputError)
			require.Equal(t, "", ch.Message.Content)
			require.Equal(t, "Call the tool.", *ch.Message.ReasoningContent)
			want := 2
			if parallel != "" {
				want = 1 // parallel_tool_calls: false keeps the first call
			}
			require.Len(t, ch.Message.ToolCalls, want)
			for i, c := range ch.Message.ToolCalls {
				require.Regexp(t, `^call_[0-9a-f]{24}$`, c.ID)
				require.Equal(t, "function", c.Type)
				require.Equal(t, "get_weather", c.Function.Name)
				if i == 0 {
					requireJSONEqual(t, weatherCalls.ToolCalls[0].Function.Arguments, c.Function.Arguments)
				} else {
					require.Equal(t, "city=Lyon", c.Function.Arguments, "a json block comes back as its text")
				}
			}
			if want == 2 {
				require.NotEqual(t, ch.Message.ToolCalls[0].ID, ch.Message.ToolCalls[1].ID)
			}

			got := accumulate(t, streamedChat(t, base, body))
			require.Equal(t, "tool_calls", got.finish)
			require.Equal(t, "Call the tool.", got.reasoning)
			require.Equal(t, "", got.content)
			require.Len(t, got.calls, want)
			for i, c := range got.calls {
				w := ch.Message.ToolCalls[i]
				require.Equal(t, w.Function, c.Function, "streamed fragments concatenate to the non-streamed arguments")
			}
		})
	}
}

// Malformed blocks: the raw text is content and finish_reason and
// output_error say what happened.
func TestMalformedToolCall(t *testing.T) {
	s, base := startServer(t, nil)
	_, tok := tiny(t)
	user := []chat.Message{{Role: "user", Content: "Weather in Paris?"}}
	whole := turnTokens(t, user, weatherCalls, weatherOptions())
	text := tok.Decode(whole)
	cutAt := strings.Index(text, `<|open|>argument key="days"`)
	require.Positive(t, cutAt)
	// The ids up to the cut: decode prefixes of the ids until they reach it.
	n := 0
	for len(tok.Decode(whole[:n])) < cutAt {
		n++
	}
	cutText := tok.Decode(whole[:n])
	bad := tok.EncodeSpecial(`r<|close|>think<|sep|><|open|>response<|sep|>ok<|close|>response<|sep|><|open|>tools<|sep|><|open|>call tool="get_weather" index="1"<|sep|><|open|>argument key="days" type="integer"<|sep|>2<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|>`)
	tests := []struct {
		name, extra   string
		tokens        []int
		engineFinish  string
		finish        string
		content       string
		reasoningWant string
	}{
		{"cut by the length limit", `,"max_tokens":63`, whole[:n], "length", "length",
			cutText[strings.Index(cutText, `<|open|>call`):], "Call the tool."},
		{"unknown argument type", `,"max_tokens":62`, bad, "stop", finishMalformedCall,
			`ok<|open|>call tool="get_weather" index="1"<|sep|><|open|>argument key="days" type="integer"<|sep|>2<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|>`, "r"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := strings.Replace(weatherBody(tc.extra), `"max_tokens":64,`, ``, 1)
			prime(t, s, body, tc.tokens, tc.engineFinish)
			ch := chatAnswer(t, base, body)
			require.Equal(t, tc.finish, ch.FinishReason)
			require.NotNil(t, ch.OutputError)
			require.Equal(t, finishMalformedCall, ch.OutputError.Code)
			require.Contains(t, ch.OutputError.Message, "get_weather")
			require.Empty(t, ch.Message.ToolCalls)
			require.True(t, strings.HasSuffix(ch.Message.Content, tc.content), "content %q", ch.Message.Content)
			require.Equal(t, tc.reasoningWant, *ch.Message.ReasoningContent)

			got := accumulate(t, streamedChat(t, base, body))
			require.Equal(t, tc.finish, got.finish)
			require.Equal(t, ch.OutputError, got.outputError)
			require.Equal(t, ch.Message.Content, got.content)
			if tc.engineFinish == "length" {
				// A call cut after its first argument was already
				// streaming, as OpenAI streams a call the length limit
				// cuts: finish_reason says so.
				require.Len(t, got.calls, 1)
				require.Equal(t, `{"city":"Paris"`, got.calls[0].Function.Arguments)
			} else {
				require.Empty(t, got.calls, "a call whose first tag is bad was never announced")
			}
		})
	}
}

// expectForced runs the engine directly on the prompt a forced tool_choice
// renders and parses its output as the server must.
func expectForced(t *testing.T, user string, opts chat.Options, maxNew int) (chat.Output, string, []int) {
	t.Helper()
	_, tok := tiny(t)
	prompt, err := chat.Prompt(tok, []chat.Message{{Role: "user", Content: user}}, opts)
	require.NoError(t, err)
	toks, res := direct(t, prompt, maxNew, chat.StopTokens(tok))
	p := chat.NewTokenParserWith(tok, opts, chat.ParseOptions{ResponseID: "x"})
	for _, id := range toks {
		p.Events(id)
	}
	p.FinishEvents(res.FinishReason == "length")
	return p.Output(), res.FinishReason, prompt
}

// A forced tool_choice on the real (tiny) model: the prompt ends inside
// the tools block (or the named call), and whatever greedy decoding writes
// there comes back either as calls or, when it does not parse, as content
// with output_error malformed_tool_call, exactly as a direct engine run
// parses; streamed and not alike.
func TestForcedToolChoiceTiny(t *testing.T) {
	_, base := startServer(t, func(o *Options) { o.MemoEntries = 0 })
	_, tok := tiny(t)
	tests := []struct {
		name, choice, tail string
		opts               func(*chat.Options)
	}{
		{"required", `"required"`, `<|open|>tools<|sep|>`, func(o *chat.Options) { o.ToolChoice = "required" }},
		{"named", `{"type":"function","function":{"name":"get_weather"}}`, `<|open|>tools<|sep|><|open|>call tool="get_weather" index="1"<|sep|>`,
			func(o *chat.Options) { o.ToolName = "get_weather" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := weatherOptions()
			tc.opts(&opts)
			out, engineFinish, prompt := expectForced(t, "Weather in Paris?", opts, 24)
			t.Logf("k3-tiny, tool_choice %s: finish %s, %d calls, err %v, content %q", tc.name, engineFinish, len(out.Calls), out.Err, out.Content)
			require.True(t, strings.HasSuffix(tok.Decode(prompt), tc.tail), "generation starts inside the tools block")

			body := strings.Replace(weatherBody(`,"tool_choice":`+tc.choice), `"max_tokens":64`, `"max_tokens":24`, 1)
			code, _, raw := post(t, base+"/v1/chat/completions", body)
			require.Equal(t, http.StatusOK, code, string(raw))
			var resp ChatCompletion
			require.NoError(t, json.Unmarshal(raw, &resp))
			require.Equal(t, len(prompt), resp.Usage.PromptTokens)
			ch := resp.Choices[0]
			require.Equal(t, out.Content, ch.Message.Content)
			require.Equal(t, out.Reasoning, *ch.Message.ReasoningContent)
			require.Len(t, ch.Message.ToolCalls, len(out.Calls))
			for i, c := range ch.Message.ToolCalls {
				require.Equal(t, out.Calls[i].Name, c.Function.Name)
				require.Equal(t, out.Calls[i].Arguments, c.Function.Arguments)
			}
			switch {
			case out.Err != nil:
				require.NotNil(t, ch.OutputError, "a call that does not parse is reported")
				require.Equal(t, finishMalformedCall, ch.OutputError.Code)
				require.Equal(t, strings.TrimPrefix(out.Err.Error(), "chat: "), ch.OutputError.Message, "the parser's error, without its package prefix")
				want := finishMalformedCall
				if engineFinish == "length" {
					want = "length"
				}
				require.Equal(t, want, ch.FinishReason)
			case len(out.Calls) > 0:
				require.Equal(t, "tool_calls", ch.FinishReason)
			default:
				require.Equal(t, engineFinish, ch.FinishReason)
			}
			if tc.name == "named" {
				// Random weights write no argument tag there: the test
				// expects the malformed report (a parseable call would
				// pass through the case above).
				require.True(t, out.Err != nil || len(out.Calls) == 1)
			}

			got := accumulate(t, streamedChat(t, base, body))
			require.Equal(t, ch.FinishReason, got.finish)
			require.Equal(t, ch.OutputError, got.outputError)
			require.Equal(t, ch.Message.Content, got.content)
			require.Len(t, got.calls, len(ch.Message.ToolCalls))
			for i, c := range got.calls {
				require.Equal(t, ch.Message.ToolCalls[i].Function, c.Function)
			}
		})
	}
}

// response_format: the output is K3's own; what does not parse, or does not
// match a strict schema, is said in finish_reason and output_error.
func TestResponseFormatCheck(t *testing.T) {
	s, base := startServer(t, nil)
	_, tok := tiny(t)
	schema := `{"type":"json_schema","json_schema":{"name":"a","strict":true,"schema":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}}}`
	answer := func(content string) []int {
		return tok.EncodeSpecial("<|close|>think<|sep|><|open|>response<|sep|>" + content + "<|close|>response<|sep|><|close|>message<|sep|>")
	}
	tests := []struct {
		name, format, content, engine, finish, code string
	}{
		{"json_object valid", `{"type":"json_object"}`, `{"a": [1]}`, "stop", "stop", ""},
		{"json_object invalid", `{"type":"json_object"}`, `{"a": [1`, "stop", finishInvalidJSON, finishInvalidJSON},
		{"json_object cut", `{"type":"json_object"}`, `{"a": [1`, "length", "length", finishInvalidJSON},
		{"strict match", schema, `{"n": 3}`, "stop", "stop", ""},
		{"strict mismatch", schema, `{"n": 3.5}`, "stop", finishSchemaMismatch, finishSchemaMismatch},
		{"strict not json", schema, `n is 3`, "stop", finishInvalidJSON, finishInvalidJSON},
		{"not strict is not checked", strings.Replace(schema, `"strict":true`, `"strict":false`, 1), `n is 3`, "stop", "stop", ""},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := fmt.Sprintf(`{"model":%q,"temperature":0,"messages":[{"role":"user","content":"Give n %d"}],"max_tokens":40,"response_format":%s}`, tinyID, i, tc.format)
			prime(t, s, body, answer(tc.content), tc.engine)
			ch := chatAnswer(t, base, body)
			require.Equal(t, tc.content, ch.Message.Content, "the tokens are K3's, unaltered")
			require.Equal(t, tc.finish, ch.FinishReason)
			if tc.code == "" {
				require.Nil(t, ch.OutputError)
			} else {
				require.Equal(t, tc.code, ch.OutputError.Code)
				require.NotEmpty(t, ch.OutputError.Message)
			}
			got := accumulate(t, streamedChat(t, base, body))
			require.Equal(t, tc.finish, got.finish)
			require.Equal(t, ch.OutputError, got.outputError)
		})
	}
}

// Stop sequences and tool calls together: a stop matches the content only
// (never a call's arguments), content held back as a possible stop's start
// comes out before the calls, and a stop in the content ends the answer
// there with no calls.
func TestToolCallsWithStop(t *testing.T) {
	t.Parallel()
	s, base := startServer(t, nil)
	reply := weatherCalls
	reply.Content = "Checking Paris."
	tokens := turnTokens(t, []chat.Message{{Role: "user", Content: "Weather in Paris?"}}, reply, weatherOptions())
	for _, tc := range []struct {
		name, stop, content, finish string
		calls                       int
	}{
		{"in the arguments only", "Lyon", "Checking Paris.", "tool_calls", 2},
		{"held at the content's end", "Paris.!", "Checking Paris.", "tool_calls", 2},
		{"in the content", "Paris", "Checking ", "stop", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := weatherBody(fmt.Sprintf(`,"stop":[%q]`, tc.stop))
			prime(t, s, body, tokens, "stop")
			ch := chatAnswer(t, base, body)
			require.Equal(t, tc.finish, ch.FinishReason)
			require.Equal(t, tc.content, ch.Message.Content)
			require.Len(t, ch.Message.ToolCalls, tc.calls)

			chunks := streamedChat(t, base, body)
			inCalls := false
			for _, c := range chunks {
				d := c.Choices[0].Delta
				inCalls = inCalls || len(d.ToolCalls) > 0
				if inCalls && d.Content != nil {
					require.Empty(t, *d.Content, "no content after a call starts")
				}
			}
			got := accumulate(t, chunks)
			require.Equal(t, tc.finish, got.finish)
			require.Equal(t, "Call the tool.", got.reasoning)
			require.Equal(t, tc.content, got.content)
			require.Len(t, got.calls, tc.calls)
			for i, c := range got.calls {
				require.Equal(t, ch.Message.ToolCalls[i].Function, c.Function)
			}
		})
	}
}
