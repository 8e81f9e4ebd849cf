package server

import (
	"encoding/json"
	"testing"

	"github.com/deltafin/deltafin/chat"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"
)

// The official Go SDK with function tools on the Responses API: a primed
// turn with two calls (the scripted model of responses_tools_test.go)
// comes back as function_call items, streamed as argument deltas that
// concatenate to the same arguments; the results sent back as
// function_call_output items continue the conversation as chat renders it.
// Then a forced function on what k3-tiny writes.
func TestSDKResponsesToolCalls(t *testing.T) {
	t.Parallel()
	_, tok := tiny(t)
	user := []chat.Message{{Role: "user", Content: "Weather in Paris?"}}
	_, withSt := withStore(t)
	prompts, _, base := scriptedTurn(t, user, weatherCalls, withSt)
	client := sdkClient(base)

	var params map[string]any
	require.NoError(t, json.Unmarshal([]byte(`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city"]}`), &params))
	tool := responses.ToolParamOfFunction("get_weather", params, false)
	tool.OfFunction.Description = openai.String("Weather for a city")
	// The SDK always sends strict: chat's tool with the same fields.
	opts := chat.DefaultOptions()
	opts.Tools = []chat.Tool{chat.Tool(`{"type":"function","function":{"name":"get_weather","description":"Weather for a city","strict":false,"parameters":` + compact(t, params) + `}}`)}
	req := responses.ResponseNewParams{Model: tinyID, Temperature: openai.Float(0), Input: sdkInput("Weather in Paris?"), MaxOutputTokens: openai.Int(256),
		Tools: []responses.ToolUnionParam{tool}}

	r, err := client.Responses.New(t.Context(), req)
	require.NoError(t, err)
	want, err := chat.Prompt(tok, user, opts)
	require.NoError(t, err)
	require.Equal(t, want, <-prompts)
	require.Equal(t, responses.ResponseStatusCompleted, r.Status)
	var calls []responses.ResponseFunctionToolCall
	for _, it := range r.Output {
		if it.Type == "function_call" {
			calls = append(calls, it.AsFunctionCall())
		}
	}
	require.Len(t, calls, 2)
	for _, c := range calls {
		require.Equal(t, "get_weather", c.Name)
		require.Regexp(t, `^call_[0-9a-f]{24}$`, c.CallID)
		require.Regexp(t, `^fc_`, c.ID)
		require.Equal(t, responses.ResponseFunctionToolCallStatusCompleted, c.Status)
	}
	requireJSONEqual(t, `{"city":"Paris","days":2}`, calls[0].Arguments)
	require.Equal(t, "city=Lyon", calls[1].Arguments)

	st := client.Responses.NewStreaming(t.Context(), req)
	args := map[string]string{}
	var done []responses.ResponseFunctionCallArgumentsDoneEvent
	var final responses.Response
	for st.Next() {
		ev := st.Current()
		switch ev.Type {
		case "response.function_call_arguments.delta":
			args[ev.ItemID] += ev.AsResponseFunctionCallArgumentsDelta().Delta
		case "response.function_call_arguments.done":
			done = append(done, ev.AsResponseFunctionCallArgumentsDone())
		case "response.completed":
			final = ev.AsResponseCompleted().Response
		}
	}
	require.NoError(t, st.Err())
	require.NoError(t, st.Close())
	<-prompts
	require.Len(t, done, 2)
	for i, d := range done {
		require.Equal(t, args[d.ItemID], d.Arguments, "the deltas concatenate to the done event's arguments")
		require.Equal(t, calls[i].Arguments, d.Arguments, "streamed as not")
	}
	require.Len(t, final.Output, 3)
	require.Equal(t, done[1].ItemID, final.Output[2].AsFunctionCall().ID)

	// The results go back; the conversation continues as chat renders it.
	outputs := responses.ResponseInputParam{}
	for i, c := range calls {
		item := responses.ResponseInputItemParamOfFunctionCallOutput([]string{"sunny", "rain"}[i])
		item.OfFunctionCallOutput.CallID = openai.String(c.CallID)
		outputs = append(outputs, item)
	}
	next, err := client.Responses.New(t.Context(), responses.ResponseNewParams{Model: tinyID, Temperature: openai.Float(0), MaxOutputTokens: openai.Int(256),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: outputs}, PreviousResponseID: openai.String(r.ID),
		Tools: []responses.ToolUnionParam{tool}})
	require.NoError(t, err)
	history := weatherHistory(user, [2]string{calls[0].CallID, calls[1].CallID}, [2]string{calls[0].Arguments, calls[1].Arguments})
	want, err = chat.Prompt(tok, history, opts)
	require.NoError(t, err)
	require.Equal(t, want, <-prompts)
	require.Equal(t, int64(len(want)), next.Usage.InputTokens)

	// Forced, on what k3-tiny writes itself.
	_, tinyBase := startServer(t, nil)
	tinyClient := sdkClient(tinyBase)
	req.Input = sdkInput("Weather in Lyon?")
	req.MaxOutputTokens = openai.Int(24)
	req.ToolChoice = responses.ResponseNewParamsToolChoiceUnion{OfFunctionTool: &responses.ToolChoiceFunctionParam{Name: "get_weather"}}
	opts.ToolName = "get_weather"
	out, engineFinish, forcedPrompt := expectForced(t, "Weather in Lyon?", opts, 24)
	t.Logf("k3-tiny in the forced call: finish %s, %d calls, err %v", engineFinish, len(out.Calls), out.Err)
	fr, err := tinyClient.Responses.New(t.Context(), req)
	require.NoError(t, err)
	require.Equal(t, int64(len(forcedPrompt)), fr.Usage.InputTokens)
	var completed int
	for _, it := range fr.Output {
		if it.Type == "function_call" && it.Status == "completed" {
			completed++
		}
	}
	require.Equal(t, len(out.Calls), completed)
	if out.Err != nil {
		require.Equal(t, responses.ResponseStatusIncomplete, fr.Status, "a call that does not parse cannot pass as completed")
		var oe OutputError
		require.NoError(t, json.Unmarshal([]byte(fr.JSON.ExtraFields["output_error"].Raw()), &oe))
		require.Equal(t, finishMalformedCall, oe.Code)
	}
}
