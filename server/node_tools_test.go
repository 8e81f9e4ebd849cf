package server

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/deltafin/deltafin/chat"
	"github.com/stretchr/testify/require"
)

type nodeToolRun struct {
	Calls       []map[string]any `json:"calls"`
	Completions []struct {
		Finish    string         `json:"finish"`
		ToolCalls []ChatToolCall `json:"tool_calls"`
		Content   string         `json:"content"`
	} `json:"completions"`
	Messages []json.RawMessage `json:"messages"`
	Next     struct {
		Content   string    `json:"content"`
		Reasoning string    `json:"reasoning"`
		Finish    string    `json:"finish"`
		Usage     nodeUsage `json:"usage"`
	} `json:"next"`
	OutputError *OutputError `json:"output_error"`
	Error       string       `json:"error"`
}

// runNode runs a script of nodeDir with node and decodes the one JSON
// object it prints into v.
func runNode(t *testing.T, v any, script string, args ...string) {
	t.Helper()
	node, err := exec.LookPath("node")
	require.NoError(t, err, "node is needed: `make deps` installs it")
	cmd := exec.CommandContext(t.Context(), node, append([]string{script}, args...)...)
	cmd.Dir = nodeDir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "node %s: %s", script, stderr.String())
	require.NoError(t, json.Unmarshal(out, v), string(out))
}

// TestNodeRunTools runs the official openai npm package's runTools with a
// forced function: on a primed answer (a call the K3 renderer writes), the
// tool is called with the parsed arguments, its result goes back and the
// loop ends, streamed and not; the next turn, sent back by the client with
// the call and its result, renders as the Jinja port does (the tiny model
// answers exactly as a direct run on that prompt). On what k3-tiny writes
// itself inside the forced call, no tool runs and output_error says why.
func TestNodeRunTools(t *testing.T) {
	s, base := startServer(t, nil)
	_, tok := tiny(t)

	opts := weatherOptions()
	opts.ToolName = "get_weather"
	user := []chat.Message{{Role: "user", Content: "Weather in Paris?"}}
	prompt, err := chat.Prompt(tok, user, opts)
	require.NoError(t, err)
	answer := tok.EncodeSpecial(`<|open|>argument key="city" type="string"<|sep|>Paris<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|>`)
	s.memo.put(keyOf(prompt, 64, s.chatStop), memoValue{tokens: answer, finish: "stop"})

	var got map[string]nodeToolRun
	runNode(t, &got, "tools.mjs", base+"/v1", tinyID)

	for _, name := range []string{"primed", "primed_stream"} {
		t.Run(name, func(t *testing.T) {
			r := got[name]
			require.Equal(t, []map[string]any{{"city": "Paris"}}, r.Calls, "the tool ran once, with the parsed arguments")
			require.Len(t, r.Completions, 1, "a forced function ends the loop after its call")
			c := r.Completions[0]
			require.Equal(t, "tool_calls", c.Finish)
			require.Len(t, c.ToolCalls, 1)
			call := c.ToolCalls[0]
			require.Regexp(t, `^call_[0-9a-f]{24}$`, call.ID)
			require.Equal(t, FunctionCall{Name: "get_weather", Arguments: `{"city":"Paris"}`}, call.Function)

			// The runner's messages: user, the assistant's call, the
			// tool's result for that call.
			require.Len(t, r.Messages, 3)
			var result struct {
				Role, Content string
				ToolCallID    string `json:"tool_call_id"`
			}
			require.NoError(t, json.Unmarshal(r.Messages[2], &result))
			require.Equal(t, "tool", result.Role)
			require.Equal(t, call.ID, result.ToolCallID)
			require.Equal(t, "sunny, 21C", result.Content)

			history := append(append([]chat.Message{}, user...),
				chat.Message{Role: "assistant", ToolCalls: []chat.ToolCall{{ID: call.ID, Type: "function", Function: chat.FunctionCall{Name: "get_weather", Arguments: call.Function.Arguments}}}},
				chat.Message{Role: "tool", ToolCallID: call.ID, Content: "sunny, 21C"})
			want := expectChat(t, history, weatherOptions(), 8)
			require.Equal(t, nodeUsage{PromptTokens: len(want.prompt), CompletionTokens: len(want.tokens), TotalTokens: len(want.prompt) + len(want.tokens)}, r.Next.Usage)
			require.Equal(t, want.content, r.Next.Content)
			require.Equal(t, want.reasoning, r.Next.Reasoning)
			require.Equal(t, want.finish, r.Next.Finish)
		})
	}

	t.Run("tiny", func(t *testing.T) {
		r := got["tiny"]
		o := weatherOptions()
		o.ToolName = "get_weather"
		out, engineFinish, _ := expectForced(t, "Weather in Lyon?", o, 64)
		t.Logf("k3-tiny in the forced call: finish %s, %d calls, err %v", engineFinish, len(out.Calls), out.Err)
		if engineFinish == "length" && len(out.Calls) == 0 {
			require.Equal(t, "LengthFinishReasonError", r.Error, "the runner refuses a cut answer")
			require.Empty(t, r.Calls, "no tool ran")
			require.NotNil(t, r.OutputError)
			require.Equal(t, finishMalformedCall, r.OutputError.Code)
			return
		}
		require.Empty(t, r.Error)
		require.Len(t, r.Completions, 1)
		c := r.Completions[0]
		require.Len(t, c.ToolCalls, len(out.Calls))
		require.Equal(t, out.Content, c.Content)
		if out.Err == nil {
			require.Len(t, r.Calls, len(out.Calls), "a parsed call runs the tool")
			return
		}
		require.Empty(t, r.Calls, "no tool runs on a call that did not parse")
		require.NotNil(t, r.OutputError)
		require.Equal(t, finishMalformedCall, r.OutputError.Code)
		if engineFinish == "length" {
			require.Equal(t, "length", c.Finish)
		} else {
			require.Equal(t, finishMalformedCall, c.Finish)
		}
	})
}
