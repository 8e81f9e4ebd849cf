package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/deltafin/deltafin/engine/chat"
	"github.com/stretchr/testify/require"
)

// weatherJSON is a scripted K3 turn: reasoning, then a JSON answer.
var weatherJSON = chat.Message{Role: "assistant", ReasoningContent: "Paris is mild today.", Content: `{"city":"Paris","temp":21}`}

// scriptedJSON serves a scripted model that answers every prompt with the
// tokens of weatherJSON as K3 writes it and the end of the turn.
func scriptedJSON(t *testing.T) string {
	t.Helper()
	_, tok := tiny(t)
	user := []chat.Message{{Role: "user", Content: "Weather in Paris?"}}
	m := newScripted(append(turnTokens(t, user, weatherJSON, chat.DefaultOptions()), chat.StopTokens(tok)[0])...)
	close(m.proceed)
	_, base := startServerWith(t, m, nil)
	return base
}

// TestResponsesTextFormat: text.format json_object and json_schema render
// K3's response-format instruction as chat's response_format does, a
// strict schema is checked against the answer (a mismatch is an
// incomplete response that says why, as chat's finish_reason does), and
// the reasoning item's summary carries K3's reasoning, whole and streamed.
func TestResponsesTextFormat(t *testing.T) {
	t.Parallel()
	base := scriptedJSON(t)
	schema := `{"type":"object","properties":{"city":{"type":"string"},"temp":{"type":"number"}},"required":["city","temp"],"additionalProperties":false}`
	wrong := `{"type":"object","properties":{"temp":{"type":"string"}},"required":["temp"]}`
	for _, tc := range []struct {
		name, format, status, reason string
	}{
		{"json_object", `{"type":"json_object"}`, "completed", ""},
		{"json_schema strict", `{"type":"json_schema","name":"weather","strict":true,"schema":` + schema + `}`, "completed", ""},
		{"json_schema not strict", `{"type":"json_schema","name":"weather","schema":` + wrong + `}`, "completed", ""},
		{"json_schema strict mismatch", `{"type":"json_schema","name":"weather","strict":true,"schema":` + wrong + `}`, "incomplete", finishSchemaMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := fmt.Sprintf(`{"model":%q,"input":"Weather in Paris?","text":{"format":%s}}`, tinyID, tc.format)
			r := createResp(t, base, body)
			require.Equal(t, tc.status, r.Status)
			require.JSONEq(t, tc.format, string(r.Text.Format), "the format is echoed")
			reasoning, answer := r.Texts()
			require.Equal(t, weatherJSON.Content, answer)
			require.Equal(t, weatherJSON.ReasoningContent, reasoning)
			require.Equal(t, "reasoning", r.Output[0].Type)
			require.Equal(t, []SummaryRef{{Type: "summary_text", Text: weatherJSON.ReasoningContent}}, *r.Output[0].Summary)
			if tc.reason != "" {
				require.Equal(t, tc.reason, r.IncompleteDetails.Reason)
				require.Equal(t, tc.reason, r.OutputError.Code)
				require.Contains(t, r.OutputError.Message, "temp")
			} else {
				require.Nil(t, r.OutputError)
			}

			evs := streamResp(t, base, body)
			var summary strings.Builder
			var types []string
			for _, ev := range evs {
				if strings.HasPrefix(ev.Type, "response.reasoning_summary") {
					types = append(types, ev.Type)
					require.Equal(t, r.Output[0].ID[:3], ev.ItemID[:3])
					require.Equal(t, 0, *ev.SummaryIndex)
				}
				if ev.Type == "response.reasoning_summary_text.delta" {
					summary.WriteString(*ev.Delta)
				}
				if ev.Type == "response.reasoning_summary_text.done" {
					require.Equal(t, weatherJSON.ReasoningContent, *ev.Text)
				}
			}
			require.Equal(t, weatherJSON.ReasoningContent, summary.String())
			require.Equal(t, "response.reasoning_summary_part.added", types[0])
			require.Equal(t, []string{"response.reasoning_summary_text.done", "response.reasoning_summary_part.done"}, types[len(types)-2:])
			last := evs[len(evs)-1].Response
			require.Equal(t, tc.status, last.Status)
		})
	}
}

// TestResponsesFormatPrompt: a Responses text.format renders the prompt a
// chat response_format with the same schema renders, and reasoning.effort
// none and medium render as K3's thinking off and high.
func TestResponsesFormatPrompt(t *testing.T) {
	t.Parallel()
	schema := `{"type":"object","properties":{"a":{"type":"string"}}}`
	for _, tc := range []struct{ resp, chat string }{
		{`"text":{"format":{"type":"json_schema","name":"x","strict":true,"schema":` + schema + `}}`,
			`"response_format":{"type":"json_schema","json_schema":{"name":"x","strict":true,"schema":` + schema + `}}`},
		{`"text":{"format":{"type":"json_object"}}`, `"response_format":{"type":"json_object"}`},
		{`"reasoning":{"effort":"none"}`, `"reasoning_effort":"none"`},
		{`"reasoning":{"effort":"medium","summary":"detailed"}`, `"reasoning_effort":"high"`},
	} {
		rec, _, ae := decodeResponseRequest([]byte(`{"model":"any","input":"hi",`+tc.resp+`}`), testLimits)
		require.Nil(t, ae, tc.resp)
		rec.Messages = rec.Input // as planResponse does without previous_response_id
		msgs, opts := rec.render()
		g, ae := decodeChat([]byte(`{"model":"any","messages":[{"role":"user","content":"hi"}],`+tc.chat+`}`), testLimits)
		require.Nil(t, ae, tc.chat)
		want, err := chat.Render(chatMessages(g.messages), chatOptions(g))
		require.NoError(t, err)
		got, err := chat.Render(msgs, opts)
		require.NoError(t, err)
		require.Equal(t, want, got, tc.resp)
		require.Equal(t, "k3-tiny", rec.Model)
	}
}

// TestNodeStructuredResponses runs the AI SDK (generateObject over the
// default Responses provider, reasoningText, streamed reasoning parts) and
// LangChain's withStructuredOutput with useResponsesApi against the
// scripted K3 turn.
func TestNodeStructuredResponses(t *testing.T) {
	t.Parallel()
	base := scriptedJSON(t)
	var got struct {
		AIObject struct {
			Object    json.RawMessage `json:"object"`
			Reasoning string          `json:"reasoning"`
			Finish    string          `json:"finish"`
		} `json:"aiObject"`
		AIText, AIStream struct {
			Text      string `json:"text"`
			Reasoning string `json:"reasoning"`
		}
		LangChain json.RawMessage `json:"langchain"`
	}
	runNode(t, &got, "structured.mjs", base+"/v1", "any-model-name")
	require.JSONEq(t, weatherJSON.Content, string(got.AIObject.Object))
	require.Equal(t, weatherJSON.ReasoningContent, got.AIObject.Reasoning)
	require.Equal(t, "stop", got.AIObject.Finish)
	require.Equal(t, weatherJSON.Content, got.AIText.Text)
	require.Equal(t, weatherJSON.ReasoningContent, got.AIText.Reasoning)
	require.Equal(t, weatherJSON.Content, got.AIStream.Text)
	require.Equal(t, weatherJSON.ReasoningContent, got.AIStream.Reasoning)
	require.JSONEq(t, weatherJSON.Content, string(got.LangChain))
}
