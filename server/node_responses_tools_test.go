package server

import (
	"testing"

	"github.com/deltafin/deltafin/chat"
	"github.com/stretchr/testify/require"
)

// nodeRespCall is a function_call item as the script saw it.
type nodeRespCall = functionCallItem

type nodeRespToolsRun struct {
	Create struct {
		Status string         `json:"status"`
		Types  []string       `json:"types"`
		Calls  []nodeRespCall `json:"calls"`
	} `json:"create"`
	Stream struct {
		Deltas map[string]string `json:"deltas"`
		Done   []struct {
			ItemID    string `json:"item_id"`
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"done"`
		Added []nodeRespCall `json:"added"`
		Last  []nodeRespCall `json:"last"`
	} `json:"stream"`
	Next, Loop struct {
		Status      string `json:"status"`
		InputTokens int    `json:"input_tokens"`
	}
	Tiny struct {
		Status      string         `json:"status"`
		Incomplete  *string        `json:"incomplete"`
		OutputError *OutputError   `json:"output_error"`
		Calls       []nodeRespCall `json:"calls"`
		Text        string         `json:"text"`
		InputTokens int            `json:"input_tokens"`
	} `json:"tiny"`
}

// TestNodeResponsesTools runs the official openai npm package with
// function tools on /v1/responses: on a primed turn (the scripted model of
// responses_tools_test.go) the calls come back as function_call items,
// streamed as argument deltas that concatenate to the same arguments; the
// results sent back (by previous_response_id, and as OpenAI's guide loops:
// the output items fed back as input) continue the conversation exactly
// as chat renders it. A forced function on what k3-tiny writes comes back
// as a completed call or as an incomplete response that says why.
func TestNodeResponsesTools(t *testing.T) {
	t.Parallel()
	_, tok := tiny(t)
	user := []chat.Message{{Role: "user", Content: "Weather in Paris?"}}
	_, withSt := withStore(t)
	prompts, _, base := scriptedTurn(t, user, weatherCalls, withSt)
	_, tinyBase := startServer(t, nil)

	var got nodeRespToolsRun
	runNode(t, &got, "responses_tools.mjs", base+"/v1", tinyBase+"/v1", tinyID)

	opts := chat.DefaultOptions()
	opts.Tools = []chat.Tool{chat.Tool(`{"type":"function","function":{"name":"get_weather","description":"Weather for a city","strict":false,` +
		`"parameters":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city"]}}}`)}
	want, err := chat.Prompt(tok, user, opts)
	require.NoError(t, err)
	require.Equal(t, want, <-prompts, "the npm client's flat tool renders as chat's")
	<-prompts // the streamed one

	require.Equal(t, "completed", got.Create.Status)
	require.Equal(t, []string{"reasoning", "function_call", "function_call"}, got.Create.Types)
	calls := got.Create.Calls
	require.Len(t, calls, 2)
	for _, c := range calls {
		require.Equal(t, "function_call", c.Type)
		require.Equal(t, "get_weather", c.Name)
		require.Equal(t, "completed", c.Status)
		require.Regexp(t, `^call_[0-9a-f]{24}$`, c.CallID)
	}
	requireJSONEqual(t, `{"city":"Paris","days":2}`, calls[0].Arguments)
	require.Equal(t, "city=Lyon", calls[1].Arguments)

	s := got.Stream
	require.Len(t, s.Added, 2)
	require.Len(t, s.Done, 2)
	require.Len(t, s.Last, 2)
	for i, d := range s.Done {
		require.Equal(t, "", s.Added[i].Arguments, "a call item starts with empty arguments")
		require.Equal(t, s.Added[i].ID, d.ItemID)
		require.Equal(t, "get_weather", d.Name)
		require.Equal(t, s.Deltas[d.ItemID], d.Arguments, "the deltas concatenate to the done event's arguments")
		require.Equal(t, calls[i].Arguments, d.Arguments, "streamed fragments concatenate to the non-streamed arguments")
		require.Equal(t, d.Arguments, s.Last[i].Arguments)
	}

	history := weatherHistory(user, [2]string{calls[0].CallID, calls[1].CallID}, [2]string{calls[0].Arguments, calls[1].Arguments})
	want, err = chat.Prompt(tok, history, opts)
	require.NoError(t, err)
	require.Equal(t, want, <-prompts, "previous_response_id with the results")
	require.Equal(t, want, <-prompts, "the output items fed back with the results")
	require.Equal(t, "completed", got.Next.Status)
	require.Equal(t, len(want), got.Next.InputTokens)
	require.Equal(t, len(want), got.Loop.InputTokens)

	tn := got.Tiny
	o := opts
	o.ToolName = "get_weather"
	out, engineFinish, forcedPrompt := expectForced(t, "Weather in Lyon?", o, 24)
	t.Logf("k3-tiny in the forced call: finish %s, %d calls, err %v; status %s", engineFinish, len(out.Calls), out.Err, tn.Status)
	require.Equal(t, len(forcedPrompt), tn.InputTokens)
	var completed []nodeRespCall
	for _, c := range tn.Calls {
		if c.Status == "completed" {
			completed = append(completed, c)
		}
	}
	require.Len(t, completed, len(out.Calls))
	require.Equal(t, out.Content, tn.Text)
	if out.Err != nil {
		require.Equal(t, "incomplete", tn.Status, "a call that does not parse cannot pass as completed")
		require.NotNil(t, tn.OutputError)
		require.Equal(t, finishMalformedCall, tn.OutputError.Code)
		require.NotNil(t, tn.Incomplete)
	}
}
