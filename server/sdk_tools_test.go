package server

import (
	"encoding/json"
	"testing"

	"github.com/deltafin/deltafin/chat"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
	"github.com/stretchr/testify/require"
)

// The official Go SDK with tools: a primed answer with two calls (see
// tools_test.go) comes back as message.tool_calls, and streamed the SDK's
// accumulator assembles the same calls from delta.tool_calls, reporting
// each as it finishes. Then a forced function on what k3-tiny writes.
func TestSDKToolCalls(t *testing.T) {
	s, base := startServer(t, nil)
	_, tok := tiny(t)
	client := sdkClient(base)
	var fn shared.FunctionDefinitionParam
	require.NoError(t, json.Unmarshal([]byte(weatherTool), &struct {
		Function *shared.FunctionDefinitionParam `json:"function"`
	}{&fn}))
	params := openai.ChatCompletionNewParams{
		Model:       tinyID,
		Temperature: openai.Float(0),
		Messages:    []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris?")},
		MaxTokens:   openai.Int(64),
		Tools:       []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(fn)},
	}
	user := []chat.Message{{Role: "user", Content: "Weather in Paris?"}}
	prompt, err := chat.Prompt(tok, user, weatherOptions())
	require.NoError(t, err)
	s.memo.put(keyOf(prompt, 64, s.chatStop), memoValue{tokens: turnTokens(t, user, weatherCalls, weatherOptions()), finish: "stop"})

	resp, err := client.Chat.Completions.New(t.Context(), params)
	require.NoError(t, err)
	require.Equal(t, int64(len(prompt)), resp.Usage.PromptTokens, "the SDK's tools render as the test's")
	ch := resp.Choices[0]
	require.Equal(t, "tool_calls", ch.FinishReason)
	require.Len(t, ch.Message.ToolCalls, 2)
	for i, c := range ch.Message.ToolCalls {
		require.Regexp(t, `^call_[0-9a-f]{24}$`, c.ID)
		require.Equal(t, "function", c.Type)
		require.Equal(t, "get_weather", c.Function.Name)
		if i == 0 {
			requireJSONEqual(t, `{"city":"Paris","days":2}`, c.Function.Arguments)
		}
	}
	require.Equal(t, "city=Lyon", ch.Message.ToolCalls[1].Function.Arguments)

	st := client.Chat.Completions.NewStreaming(t.Context(), params)
	var acc openai.ChatCompletionAccumulator
	var finished []openai.FinishedChatCompletionToolCall
	for st.Next() {
		require.True(t, acc.AddChunk(st.Current()))
		if tc, ok := acc.JustFinishedToolCall(); ok {
			finished = append(finished, tc)
		}
	}
	require.NoError(t, st.Err())
	require.NoError(t, st.Close())
	require.Len(t, acc.Choices, 1)
	got := acc.Choices[0].Message.ToolCalls
	require.Len(t, got, 2)
	require.Len(t, finished, 2, "the accumulator saw each call finish")
	for i, c := range got {
		require.Equal(t, ch.Message.ToolCalls[i].Function.Name, c.Function.Name)
		require.Equal(t, ch.Message.ToolCalls[i].Function.Arguments, c.Function.Arguments, "streamed fragments concatenate to the non-streamed arguments")
		require.Equal(t, c.ID, finished[i].ID)
		require.Equal(t, c.Function.Arguments, finished[i].Arguments)
	}
	require.Equal(t, "tool_calls", acc.Choices[0].FinishReason)

	// Forced, on what k3-tiny writes itself.
	params.Messages = []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Lyon?")}
	params.ToolChoice = openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "get_weather"})
	o := weatherOptions()
	o.ToolName = "get_weather"
	out, engineFinish, forcedPrompt := expectForced(t, "Weather in Lyon?", o, 64)
	resp, err = client.Chat.Completions.New(t.Context(), params)
	require.NoError(t, err)
	require.Equal(t, int64(len(forcedPrompt)), resp.Usage.PromptTokens)
	ch = resp.Choices[0]
	require.Len(t, ch.Message.ToolCalls, len(out.Calls))
	require.Equal(t, out.Content, ch.Message.Content)
	if out.Err != nil {
		var oe OutputError
		require.NoError(t, json.Unmarshal([]byte(ch.JSON.ExtraFields["output_error"].Raw()), &oe))
		require.Equal(t, finishMalformedCall, oe.Code)
		if engineFinish != "length" {
			require.Equal(t, finishMalformedCall, ch.FinishReason)
		}
	}
}
