package chat

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// testdata/chat/pyjson_cases.json holds what CPython's json module makes of
// tool-call arguments and tool declarations (see its _provenance).
func TestPythonJSONCases(t *testing.T) {
	raw, err := os.ReadFile("../testdata/chat/pyjson_cases.json")
	require.NoError(t, err)
	var fx struct {
		Cases []struct {
			Arguments string     `json:"arguments"`
			Rendered  [][]string `json:"arguments_rendered"`
		} `json:"cases"`
		Tools        []json.RawMessage `json:"tools"`
		ToolsCompact string            `json:"tools_compact"`
	}
	require.NoError(t, json.Unmarshal(raw, &fx))
	require.NotEmpty(t, fx.Cases)
	for _, c := range fx.Cases {
		t.Run(c.Arguments, func(t *testing.T) {
			segs, err := Render([]Message{{Role: "assistant", ToolCalls: []ToolCall{{Function: FunctionCall{Name: "f", Arguments: c.Arguments}}}}}, Options{NoGenerationPrompt: true})
			require.NoError(t, err)
			var want strings.Builder
			for _, kv := range c.Rendered {
				want.WriteString(`<|open|>argument key="` + escapeAttr(kv[0]) + `" type="` + kv[1] + `"<|sep|>` + kv[2] + `<|close|>argument<|sep|>`)
			}
			require.Contains(t, joined(segs), `<|open|>call tool="f" index="1"<|sep|>`+want.String()+`<|close|>call<|sep|>`)
		})
	}
	var tools []Tool
	for _, tool := range fx.Tools {
		tools = append(tools, Tool(tool))
	}
	segs, err := Render(nil, Options{Tools: tools, NoGenerationPrompt: true})
	require.NoError(t, err)
	require.Contains(t, joined(segs), "```json\n"+fx.ToolsCompact+"\n```")
}
