package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestResponsesRefuses: what the server cannot honour gets a 400 naming
// the field, before any work; without a store, background responses and
// previous_response_id are refused the same way.
func TestResponsesRefuses(t *testing.T) {
	t.Parallel()
	s, base := startServer(t, nil) // no store
	for _, tc := range []struct{ extra, param string }{
		{`,"tools":[{"type":"web_search"}]`, "tools[0].type"},
		{`,"tools":[{"type":"function","name":"f"},{"type":"file_search","vector_store_ids":["v"]}]`, "tools[1].type"},
		{`,"tools":[{"type":"function","function":{"name":"f"}}]`, "tools[0].function"},
		{`,"tools":[{"type":"function","name":"f"},{"type":"function","name":"f"}]`, "tools[1].name"},
		{`,"tools":[{"type":"function","name":"f","parameters":[]}]`, "tools[0].parameters"},
		{`,"tool_choice":"required"`, "tool_choice"},
		{`,"tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"function","name":"g"}`, "tool_choice.name"},
		{`,"tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"function","function":{"name":"f"}}`, "tool_choice.function"},
		{`,"tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"web_search_preview"}`, "tool_choice.type"},
		{`,"max_tool_calls":0`, "max_tool_calls"},
		{`,"include":["file_search_call.results"]`, "include[0]"},
		{`,"text":{"format":{"type":"yaml"}}`, "text.format.type"},
		{`,"text":{"format":{"type":"json_schema","name":"a b","schema":{}}}`, "text.format.name"},
		{`,"text":{"format":{"type":"json_object","schema":{}}}`, "text.format"},
		{`,"text":{"verbosity":"loud"}`, "text.verbosity"},
		{`,"reasoning":{"effort":"huge"}`, "reasoning.effort"},
		{`,"reasoning":{"summary":"long"}`, "reasoning.summary"},
		{`,"truncation":"auto"`, "truncation"},
		{`,"frobnicate":1`, "frobnicate"},
		{`,"stop":["a","b","c","d","e"]`, "stop"},
		{`,"max_output_tokens":0`, "max_output_tokens"},
		{`,"background":true,"store":false`, "background"},
		{`,"background":true`, "background"},
		{`,"previous_response_id":"resp_x"`, "previous_response_id"},
	} {
		code, _, b := post(t, base+"/v1/responses", fmt.Sprintf(`{"model":%q,"temperature":0,"input":"hi"%s}`, tinyID, tc.extra))
		require.Equal(t, http.StatusBadRequest, code, "%s: %s", tc.extra, b)
		require.Equal(t, tc.param, *decodeError(t, b).Param, tc.extra)
	}
	for _, tc := range []struct{ input, param string }{
		{`[{"role":"user","content":[{"type":"input_image","image_url":"https://x"}]}]`, "input[0].content[0]"},
		{`[{"type":"function_call_output","output":"x"}]`, "input[0].call_id"},
		{`[{"type":"function_call_output","call_id":"c","output":[{"type":"input_image","image_url":"x"}]}]`, "input[0].output[0]"},
		{`[{"type":"function_call","call_id":"c","arguments":"{}"}]`, "input[0].name"},
		{`[{"role":"user","content":"hi"},{"type":"function_call_output","call_id":"nothing","output":"x"}]`, "input"},
		{`[{"type":"web_search_call","id":"ws_1"}]`, "input[0].type"},
		{`[{"type":"reasoning","content":[{"type":"reasoning_text","text":"x"}]}]`, "input[0]"},
		{`[]`, "input"},
		{`3`, "input"},
	} {
		code, _, b := post(t, base+"/v1/responses", fmt.Sprintf(`{"model":%q,"temperature":0,"input":%s}`, tinyID, tc.input))
		require.Equal(t, http.StatusBadRequest, code, "%s: %s", tc.input, b)
		require.Equal(t, tc.param, *decodeError(t, b).Param, tc.input)
	}
	require.Zero(t, s.generations.Load(), "no refused request reached the engine")
	code, b := get(t, base+"/v1/responses/resp_nothing")
	require.Equal(t, http.StatusNotFound, code)
	require.Equal(t, "not_found", *decodeError(t, b).Code)
}

// TestResponsesStop: a stop sequence ends a response's answer where it
// first appears, completed, the stop string never in the output.
func TestResponsesStop(t *testing.T) {
	t.Parallel()
	_, withSt := withStore(t)
	_, base := startServer(t, func(o *Options) { withSt(o); o.MemoEntries = 0 })
	req := fmt.Sprintf(`{"model":%q,"temperature":0,"input":"hi","reasoning":{"effort":"none"},"max_output_tokens":40%%s}`, tinyID)
	code, _, b := post(t, base+"/v1/responses", fmt.Sprintf(req, ""))
	require.Equal(t, http.StatusOK, code, string(b))
	_, answer := outputText(decodeResponse(t, b))
	require.Greater(t, len(answer), 8)
	stop := answer[len(answer)/2 : len(answer)/2+2]
	cut := answer[:strings.Index(answer, stop)]
	stopJSON, _ := json.Marshal(stop)

	code, _, b = post(t, base+"/v1/responses", fmt.Sprintf(req, `,"stop":`+string(stopJSON)))
	require.Equal(t, http.StatusOK, code, string(b))
	r := decodeResponse(t, b)
	_, got := outputText(r)
	require.Equal(t, cut, got)
	require.Equal(t, "completed", r.Status)
	require.Zero(t, r.Usage.OutputTokensDetails.ReasoningTokens, "thinking off")
}
