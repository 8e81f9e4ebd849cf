package chat

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/tokenizer"
)

type fixtureCase struct {
	Name  string `json:"name"`
	Input struct {
		Messages            []json.RawMessage `json:"messages"`
		Tools               []json.RawMessage `json:"tools"`
		AddGenerationPrompt *bool             `json:"add_generation_prompt"`
		Thinking            *bool             `json:"thinking"`
		ThinkingEffort      string            `json:"thinking_effort"`
	} `json:"input"`
	Rendered string `json:"rendered"`
}

// fromOpenAI converts a message in OpenAI's JSON shape.
func fromOpenAI(t *testing.T, raw json.RawMessage) Message {
	var m struct {
		Role             string          `json:"role"`
		Name             string          `json:"name"`
		Content          json.RawMessage `json:"content"`
		ReasoningContent string          `json:"reasoning_content"`
		ToolCallID       string          `json:"tool_call_id"`
		ToolCalls        []struct {
			ID       string `json:"id"`
			Type     string `json:"type"`
			Function struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	}
	require.NoError(t, json.Unmarshal(raw, &m))
	out := Message{Role: m.Role, Name: m.Name, ReasoningContent: m.ReasoningContent, ToolCallID: m.ToolCallID}
	if len(m.Content) > 0 && m.Content[0] == '[' {
		var parts []struct{ Type, Text string }
		require.NoError(t, json.Unmarshal(m.Content, &parts))
		out.Parts = []Part{}
		for _, p := range parts {
			out.Parts = append(out.Parts, Part{Type: p.Type, Text: p.Text})
		}
	} else if len(m.Content) > 0 {
		require.NoError(t, json.Unmarshal(m.Content, &out.Content))
	}
	for _, c := range m.ToolCalls {
		args := string(c.Function.Arguments) // an object, key order kept
		if strings.HasPrefix(args, `"`) {
			require.NoError(t, json.Unmarshal(c.Function.Arguments, &args)) // OpenAI's JSON string
		}
		out.ToolCalls = append(out.ToolCalls, ToolCall{ID: c.ID, Type: c.Type, Function: FunctionCall{Name: c.Function.Name, Arguments: args}})
	}
	return out
}

func loadCases(t *testing.T) []fixtureCase {
	raw, err := os.ReadFile("../testdata/chat/chat_cases.json")
	require.NoError(t, err)
	var cases []fixtureCase
	require.NoError(t, json.Unmarshal(raw, &cases))
	require.Len(t, cases, 14)
	return cases
}

func caseInput(t *testing.T, c fixtureCase) ([]Message, Options) {
	var msgs []Message
	for _, m := range c.Input.Messages {
		msgs = append(msgs, fromOpenAI(t, m))
	}
	opts := DefaultOptions()
	opts.Effort = c.Input.ThinkingEffort
	if c.Input.Thinking != nil {
		opts.Thinking = *c.Input.Thinking
	}
	if c.Input.AddGenerationPrompt != nil {
		opts.NoGenerationPrompt = !*c.Input.AddGenerationPrompt
	}
	for _, tool := range c.Input.Tools {
		opts.Tools = append(opts.Tools, Tool(tool))
	}
	return msgs, opts
}

func joined(segs []Segment) string {
	var b strings.Builder
	for _, s := range segs {
		b.WriteString(s.Text)
	}
	return b.String()
}

var controlText = map[string]bool{Open: true, Close: true, Sep: true, EndOfMsg: true}

func TestChatCases(t *testing.T) {
	tok, err := tokenizer.Load("../testdata/tokenizer")
	require.NoError(t, err)
	for _, c := range loadCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			msgs, opts := caseInput(t, c)
			segs, err := Render(msgs, opts)
			require.NoError(t, err)
			require.Equal(t, c.Rendered, joined(segs))

			// Control segments are exactly the four markers, nothing
			// else is, and no segment is empty.
			for _, s := range segs {
				require.NotEmpty(t, s.Text)
				require.Equal(t, controlText[s.Text], s.Control, "segment %q", s.Text)
			}
			// Token level: each control segment is one special id and
			// the specials in the prompt are exactly those, in order.
			ids := Tokenize(tok, segs)
			var wantSpecial, gotSpecial []int
			for _, s := range segs {
				if s.Control {
					id, ok := tok.SpecialID(s.Text)
					require.True(t, ok)
					wantSpecial = append(wantSpecial, id)
				}
			}
			for _, id := range ids {
				if tok.IsSpecial(id) {
					gotSpecial = append(gotSpecial, id)
				}
			}
			require.Equal(t, wantSpecial, gotSpecial)
			require.Equal(t, c.Rendered, tok.Decode(ids))
		})
	}
}

// One user message with the defaults renders as 38 segments, and the user's
// literal <|open|> is plain text, so the special appears 4 times
// (docs/MODEL.md §7).
func TestUserTextCannotInjectControl(t *testing.T) {
	tok, err := tokenizer.Load("../testdata/tokenizer")
	require.NoError(t, err)
	segs, err := Render([]Message{{Role: "user", Content: "Hello <|open|> & goodbye"}}, DefaultOptions())
	require.NoError(t, err)
	require.Len(t, segs, 38)
	ids := Tokenize(tok, segs)
	open, _ := tok.SpecialID(Open)
	n := 0
	for _, id := range ids {
		if id == open {
			n++
		}
	}
	require.Equal(t, 4, n)
	require.Contains(t, tok.Decode(ids), "Hello <|open|> & goodbye")

	// Attribute values are escaped and plain text too.
	segs, err = Render([]Message{{Role: "user", Name: `a"<|sep|>&b`, Content: "x"}}, Options{})
	require.NoError(t, err)
	require.Contains(t, joined(segs), `name="a&quot;<|sep|>&amp;b"`)
	ids = Tokenize(tok, segs)
	sep, _ := tok.SpecialID(Sep)
	seps := 0
	for _, id := range ids {
		if id == sep {
			seps++
		}
	}
	require.Equal(t, 4, seps, "user open and close, assistant open, response open: the name adds none")
}

func TestRenderErrors(t *testing.T) {
	cases := []struct {
		name    string
		msgs    []Message
		opts    Options
		wantErr error
		msg     string
	}{
		{"medium effort", []Message{{Role: "user", Content: "hi"}}, Options{Thinking: true, Effort: "medium"}, ErrEffort, `"medium"`},
		{"unknown effort", []Message{{Role: "user", Content: "hi"}}, Options{Thinking: true, Effort: "huge"}, ErrEffort, "low, high or max"},
		{"unknown role", []Message{{Role: "robot", Content: "hi"}}, DefaultOptions(), ErrMessage, `"robot"`},
		{"image part", []Message{{Role: "user", Parts: []Part{{Type: "image_url"}}}}, DefaultOptions(), ErrMessage, "image_url"},
		{"array arguments", []Message{{Role: "assistant", ToolCalls: []ToolCall{{Function: FunctionCall{Name: "f", Arguments: "[1]"}}}}}, DefaultOptions(), ErrMessage, "JSON object"},
		{"unnamed tool result", []Message{{Role: "tool", Content: "x"}}, DefaultOptions(), ErrMessage, "names no tool"},
		{"bad tool", []Message{{Role: "user", Content: "x"}}, Options{Tools: []Tool{Tool("{")}}, ErrTool, "tool 0"},
		{"bad response format", []Message{{Role: "user", Content: "x"}}, Options{ResponseFormat: &ResponseFormat{Type: "yaml"}}, ErrMessage, "yaml"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Render(c.msgs, c.opts)
			require.ErrorIs(t, err, c.wantErr)
			require.ErrorContains(t, err, c.msg)
		})
	}
	// With thinking off the effort is not used, as in the official renderer.
	_, err := Render([]Message{{Role: "user", Content: "hi"}}, Options{Effort: "medium"})
	require.NoError(t, err)
}

func TestToolArguments(t *testing.T) {
	segs, err := Render([]Message{{Role: "assistant", ToolCalls: []ToolCall{{ID: "a", Function: FunctionCall{
		Name:      "f",
		Arguments: `{"z": "é\n", "n": null, "b": true, "i": -0, "f": 2.50, "e": 1e2, "big": 1e16, "small": 0.00001, "o": {"y": [1, "a\"\u0001"], "x": {}}, "a": [], "z": "last"}`,
	}}}}}, Options{NoGenerationPrompt: true})
	require.NoError(t, err)
	got := joined(segs)
	for _, want := range []string{
		`<|open|>argument key="z" type="string"<|sep|>last<|close|>argument<|sep|>`, // a repeated key keeps its first place, last value
		`key="n" type="null"<|sep|>null<|close|>`,
		`key="b" type="boolean"<|sep|>true<|close|>`,
		`key="i" type="number"<|sep|>0<|close|>`,
		`key="f" type="number"<|sep|>2.5<|close|>`,
		`key="e" type="number"<|sep|>100.0<|close|>`,
		`key="big" type="number"<|sep|>1e+16<|close|>`,
		`key="small" type="number"<|sep|>1e-05<|close|>`,
		`key="o" type="object"<|sep|>{"y": [1, "a\"\u0001"], "x": {}}<|close|>`,
		`key="a" type="array"<|sep|>[]<|close|>`,
	} {
		require.Contains(t, got, want)
	}
	require.Less(t, strings.Index(got, `key="z"`), strings.Index(got, `key="n"`))

	// Empty arguments render no argument blocks.
	segs, err = Render([]Message{{Role: "assistant", ToolCalls: []ToolCall{{Function: FunctionCall{Name: "f", Arguments: "  "}}}}}, Options{NoGenerationPrompt: true})
	require.NoError(t, err)
	require.Contains(t, joined(segs), `<|open|>call tool="f" index="1"<|sep|><|close|>call<|sep|>`)
}

func TestPyFloat(t *testing.T) {
	for in, want := range map[float64]string{
		1: "1.0", 0.1: "0.1", 1e15: "1000000000000000.0", 1e16: "1e+16", 1.5e16: "1.5e+16", 0.0001: "0.0001",
		1e-5: "1e-05", -2.5e-7: "-2.5e-07", 123456.789: "123456.789", 1e100: "1e+100", 0: "0.0",
	} {
		require.Equal(t, want, pyFloat(in), "%v", in)
	}
	require.Equal(t, "Infinity", pyNumber("1e400"))
	require.Equal(t, "12345678901234567890", pyNumber("12345678901234567890"))
}

// Tool results are reordered to the calls' order when every ID matches, and
// take the matched call's name.
func TestToolResultOrder(t *testing.T) {
	calls := []ToolCall{{ID: "1", Function: FunctionCall{Name: "a"}}, {ID: "2", Function: FunctionCall{Name: "b"}}}
	msgs := []Message{
		{Role: "user", Content: "go"},
		{Role: "assistant", ToolCalls: calls},
		{Role: "tool", ToolCallID: "2", Content: "B"},
		{Role: "tool", ToolCallID: "1", Content: "A"},
	}
	segs, err := Render(msgs, Options{})
	require.NoError(t, err)
	got := joined(segs)
	require.Contains(t, got, `<|open|>message role="tool" tool="a" index="1"<|sep|>A<|close|>message<|sep|><|end_of_msg|><|open|>message role="tool" tool="b" index="2"<|sep|>B`)

	// One unknown ID: the run stays in the given order, named by position.
	msgs[3].ToolCallID = "9"
	segs, err = Render(msgs, Options{})
	require.NoError(t, err)
	require.Contains(t, joined(segs), `tool="a" index="1"<|sep|>B<|close|>message<|sep|><|end_of_msg|><|open|>message role="tool" tool="b" index="2"<|sep|>A`)
}

func TestInternalMessages(t *testing.T) {
	msgs := []Message{
		{Role: "system", Tools: []Tool{Tool(`{"b":1,"a":{"d":[{"f":1,"e":2}],"c":"ü"}}`)}},
		{Role: "developer", Content: "be brief"},
		{Role: "user", Content: "hi"},
	}
	segs, err := Render(msgs, Options{ToolChoice: "required", ResponseFormat: &ResponseFormat{Type: "json_schema", Schema: json.RawMessage(`{"type":"object","properties":{}}`)}})
	require.NoError(t, err)
	got := joined(segs)
	require.Contains(t, got, "## New Tools Available\n")
	require.Contains(t, got, "```json\n[{\"a\":{\"c\":\"ü\",\"d\":[{\"e\":2,\"f\":1}]},\"b\":1}]\n```<|close|>message")
	require.Contains(t, got, `<|open|>message role="system"<|sep|>be brief<|close|>`)
	require.Contains(t, got, "`tool_choice=required`.\nYou MUST call tools in the next message.")
	require.Contains(t, got, "must match the following schema:\n```json\n{\"properties\":{},\"type\":\"object\"}\n```")
	// Required: generation starts inside the tools block.
	require.True(t, strings.HasSuffix(got, `<|open|>message role="assistant"<|sep|><|open|>response<|sep|><|close|>response<|sep|><|open|>tools<|sep|>`))
}

func TestPromptNeedsControlTokens(t *testing.T) {
	dir := t.TempDir()
	model, err := os.ReadFile("../testdata/tokenizer/tiktoken.model")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(dir+"/tiktoken.model", model, 0o644))
	require.NoError(t, os.WriteFile(dir+"/tokenizer_config.json", []byte(`{"added_tokens_decoder":{}}`), 0o644))
	tok, err := tokenizer.Load(dir) // every special is <|reserved_token_N|>
	require.NoError(t, err)
	_, err = Prompt(tok, []Message{{Role: "user", Content: "hi"}}, DefaultOptions())
	require.ErrorIs(t, err, ErrTokenizer)
	require.ErrorContains(t, err, Open)
}

// testdata/chat/format_cases.json: tool_choice and response_format rendered
// by the Kimi-K3 Jinja port (gen_format_cases.py). "required" renders
// exactly that prompt, then opens the tools block the way the renderer
// writes an assistant turn with no reasoning and no content, so that the
// model writes a call.
func TestFormatCases(t *testing.T) {
	raw, err := os.ReadFile("../testdata/chat/format_cases.json")
	require.NoError(t, err)
	var cases []struct {
		Name  string `json:"name"`
		Input struct {
			Messages       []json.RawMessage `json:"messages"`
			Tools          []json.RawMessage `json:"tools"`
			Thinking       *bool             `json:"thinking"`
			ToolChoice     string            `json:"tool_choice"`
			ResponseFormat *struct {
				Type       string `json:"type"`
				JSONSchema *struct {
					Schema json.RawMessage `json:"schema"`
				} `json:"json_schema"`
			} `json:"response_format"`
		} `json:"input"`
		Rendered string `json:"rendered"`
	}
	require.NoError(t, json.Unmarshal(raw, &cases))
	require.Len(t, cases, 8)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			opts := DefaultOptions()
			if c.Input.Thinking != nil {
				opts.Thinking = *c.Input.Thinking
			}
			var msgs []Message
			for _, m := range c.Input.Messages {
				msgs = append(msgs, fromOpenAI(t, m))
			}
			for _, tool := range c.Input.Tools {
				opts.Tools = append(opts.Tools, Tool(tool))
			}
			opts.ToolChoice = c.Input.ToolChoice
			if rf := c.Input.ResponseFormat; rf != nil {
				opts.ResponseFormat = &ResponseFormat{Type: rf.Type}
				if rf.JSONSchema != nil {
					opts.ResponseFormat.Schema = rf.JSONSchema.Schema
				}
			}
			segs, err := Render(msgs, opts)
			require.NoError(t, err)
			want := c.Rendered
			if opts.ToolChoice == "required" {
				if opts.Thinking {
					want += "<|close|>think<|sep|><|open|>response<|sep|>"
				}
				want += "<|close|>response<|sep|><|open|>tools<|sep|>"
			}
			require.Equal(t, want, joined(segs))

			// A named tool: the same prompt, inside the call's tag.
			if opts.ToolChoice == "required" {
				opts.ToolChoice, opts.ToolName = "", "get_weather"
				segs, err := Render(msgs, opts)
				require.NoError(t, err)
				require.Equal(t, want+`<|open|>call tool="get_weather" index="1"<|sep|>`, joined(segs))
			}
		})
	}
}
