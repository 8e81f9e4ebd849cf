package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	"github.com/deltafin/deltafin/chat"
	"github.com/deltafin/deltafin/internal/usertext"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// This file is the chat-completions side of tool calls and response
// formats: validating tools, tool_choice, parallel_tool_calls and
// response_format; turning the chat parser's calls into message.tool_calls
// and its events into delta.tool_calls; and the finish_reason and
// output_error of an answer.

// The finish reasons beyond OpenAI's stop, length and tool_calls. Each is
// also the code of the choice's output_error.
const (
	// finishMalformedCall: the model wrote a tools block that does not
	// parse; its raw text is at the end of content.
	finishMalformedCall = "malformed_tool_call"
	// finishInvalidJSON: response_format json_object or a strict
	// json_schema, and the content is not JSON.
	finishInvalidJSON = "invalid_json"
	// finishSchemaMismatch: a strict json_schema, and the content is JSON
	// that does not match it.
	finishSchemaMismatch = "schema_mismatch"
)

// toolSettings are a chat request's validated tool and format settings.
type toolSettings struct {
	tools      []json.RawMessage // each a validated ChatTool, as the client sent it
	toolChoice string            // "" | "auto" | "none" | "required"
	toolName   string            // a named tool_choice
	parallel   bool              // parallel_tool_calls (default true)
	format     *chat.ResponseFormat
	// check is how the content is checked against response_format:
	// nil for none, else it returns an output error or nil.
	check func(content string) *OutputError
}

// checkTools validates tools, tool_choice, parallel_tool_calls and
// response_format.
func checkTools(req *ChatRequest) (toolSettings, *apiError) {
	ts := toolSettings{parallel: req.ParallelToolCalls == nil || *req.ParallelToolCalls}
	names := map[string]bool{}
	for i, raw := range req.Tools {
		p := fmt.Sprintf("tools[%d]", i)
		var t ChatTool
		if err := decodeStrict(raw, &t); err != nil {
			return ts, jsonError(err, p)
		}
		if t.Type != "function" {
			return ts, invalid(codeInvalidValue, p+".type", "tool type must be \"function\", not %q", t.Type)
		}
		if e := checkFunction(p+".function", t.Function.Name, t.Function.Parameters, names); e != nil {
			return ts, e
		}
	}
	ts.tools = req.Tools
	var e *apiError
	if ts.toolChoice, ts.toolName, e = checkToolChoice(req.ToolChoice, names, false); e != nil {
		return ts, e
	}
	if ts.format, ts.check, e = checkResponseFormat(req.ResponseFormat); e != nil {
		return ts, e
	}
	return ts, nil
}

// checkFunction validates one declared function, whose fields are at path
// p ("tools[i].function" for chat, "tools[i]" for the Responses API's flat
// shape), and adds its name to names.
func checkFunction(p, name string, params json.RawMessage, names map[string]bool) *apiError {
	if name == "" {
		return invalid(codeMissing, p+".name", "a tool needs a name")
	}
	if names[name] {
		return invalid(codeInvalidValue, p+".name", "tool %q is declared twice", name)
	}
	names[name] = true
	if !isNull(params) && kindOf(params) != '{' {
		return invalid(codeInvalidValue, p+".parameters", "must be a JSON Schema object")
	}
	return nil
}

// checkToolChoice reads "none", "auto", "required" or a named function,
// which must be a declared tool: {"type":"function","function":{"name":…}}
// for chat, {"type":"function","name":…} when flat (the Responses API).
func checkToolChoice(raw json.RawMessage, tools map[string]bool, flat bool) (choice, name string, e *apiError) {
	if isNull(raw) {
		return "", "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "auto", "none":
			return s, "", nil
		case "required":
			if len(tools) == 0 {
				return "", "", invalid(codeInvalidValue, "tool_choice", "tool_choice \"required\" needs tools")
			}
			return s, "", nil
		}
		return "", "", invalid(codeInvalidValue, "tool_choice", "must be \"auto\", \"none\", \"required\" or a function, not %q", s)
	}
	if kindOf(raw) != '{' {
		return "", "", invalid(codeInvalidValue, "tool_choice", "must be a string or an object")
	}
	var typ struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(raw, &typ) // an object: only the type is read here
	if typ.Type != "function" {
		return "", "", invalid(codeInvalidValue, "tool_choice.type", "must be \"function\", not %q", typ.Type)
	}
	namePath := "tool_choice.function.name"
	var obj struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	var err error
	if flat {
		namePath = "tool_choice.name"
		var f struct {
			Type string `json:"type"`
			Name string `json:"name"`
		}
		err = decodeStrict(raw, &f)
		obj.Function.Name = f.Name
	} else {
		err = decodeStrict(raw, &obj)
	}
	if err != nil {
		return "", "", jsonError(err, "tool_choice")
	}
	if !tools[obj.Function.Name] {
		return "", "", invalid(codeInvalidValue, namePath, "no declared tool is named %q", obj.Function.Name)
	}
	return "required", obj.Function.Name, nil
}

// schemaName is OpenAI's rule for json_schema.name.
var schemaName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// checkResponseFormat reads response_format. The schema goes to the
// renderer as the official template picks it: json_schema.schema.
func checkResponseFormat(raw json.RawMessage) (*chat.ResponseFormat, func(string) *OutputError, *apiError) {
	if isNull(raw) {
		return nil, nil, nil
	}
	var rf struct {
		Type       string          `json:"type"`
		JSONSchema json.RawMessage `json:"json_schema"`
	}
	if err := decodeStrict(raw, &rf); err != nil {
		return nil, nil, jsonError(err, "response_format")
	}
	switch rf.Type {
	case "text":
		if !isNull(rf.JSONSchema) {
			return nil, nil, invalid(codeInvalidValue, "response_format.json_schema", "only for type \"json_schema\"")
		}
		return nil, nil, nil
	case "json_object":
		if !isNull(rf.JSONSchema) {
			return nil, nil, invalid(codeInvalidValue, "response_format.json_schema", "only for type \"json_schema\"")
		}
		return &chat.ResponseFormat{Type: rf.Type}, checkJSON, nil
	case "json_schema":
	default:
		return nil, nil, invalid(codeInvalidValue, "response_format.type", "must be \"text\", \"json_object\" or \"json_schema\", not %q", rf.Type)
	}
	if isNull(rf.JSONSchema) {
		return nil, nil, invalid(codeMissing, "response_format.json_schema", "type \"json_schema\" needs json_schema")
	}
	var js struct {
		Name        string          `json:"name"`
		Description *string         `json:"description"`
		Schema      json.RawMessage `json:"schema"`
		Strict      *bool           `json:"strict"`
	}
	if err := decodeStrict(rf.JSONSchema, &js); err != nil {
		return nil, nil, jsonError(err, "response_format.json_schema")
	}
	if !schemaName.MatchString(js.Name) {
		return nil, nil, invalid(codeInvalidValue, "response_format.json_schema.name", "must be 1-64 letters, digits, _ or -, got %q", js.Name)
	}
	if isNull(js.Schema) {
		js.Schema = json.RawMessage(`{}`) // OpenAI: any JSON
	}
	if kindOf(js.Schema) != '{' {
		return nil, nil, invalid(codeInvalidValue, "response_format.json_schema.schema", "must be a JSON Schema object")
	}
	f := &chat.ResponseFormat{Type: rf.Type, Schema: js.Schema}
	if js.Strict == nil || !*js.Strict {
		return f, nil, nil // not strict: no promise to check
	}
	sch, err := compileSchema(js.Schema)
	if err != nil {
		return nil, nil, invalid(codeInvalidValue, "response_format.json_schema.schema", "not a usable JSON Schema: %v", err)
	}
	return f, func(content string) *OutputError {
		v, oe := parseContent(content)
		if oe != nil {
			return oe
		}
		if err := sch.Validate(v); err != nil {
			return &OutputError{Code: finishSchemaMismatch, Message: fmt.Sprintf("the content does not match the json_schema: %v", err)}
		}
		return nil
	}, nil
}

// errNoLoader refuses every $ref outside the schema: a request must not
// make the server read files or the network.
var errNoLoader = errors.New("references outside the schema are not loaded")

type noLoader struct{}

func (noLoader) Load(url string) (any, error) { return nil, fmt.Errorf("%w: %s", errNoLoader, url) }

func compileSchema(schema json.RawMessage) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	const url = "request:///response_format.json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return c.Compile(url)
}

func parseContent(content string) (any, *OutputError) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(content)))
	if err != nil {
		return nil, &OutputError{Code: finishInvalidJSON, Message: fmt.Sprintf("the content is not JSON: %v", err)}
	}
	return v, nil
}

func checkJSON(content string) *OutputError {
	_, oe := parseContent(content)
	return oe
}

// finishOf settles an answer's finish_reason and output_error: the
// engine's "length" stands; then a malformed tools block, calls, and the
// response_format check of an answer without calls.
func (ts *toolSettings) finishOf(engine string, out chat.Output) (string, *OutputError) {
	var oe *OutputError
	switch {
	case out.Err != nil:
		oe = &OutputError{Code: finishMalformedCall, Message: usertext.Of(out.Err)}
	case len(out.Calls) > 0:
		if engine == "length" {
			return engine, nil
		}
		return "tool_calls", nil
	case ts.check != nil:
		oe = ts.check(out.Content)
	}
	if engine == "length" || oe == nil {
		return engine, oe
	}
	return oe.Code, oe
}

// parseOptions are the chat parser's settings for a response.
func (ts *toolSettings) parseOptions(responseID string) chat.ParseOptions {
	po := chat.ParseOptions{ResponseID: responseID}
	if !ts.parallel {
		po.MaxCalls = 1
	}
	return po
}

// messageToolCalls is message.tool_calls; nil without calls.
func messageToolCalls(calls []chat.Call) []ChatToolCall {
	var out []ChatToolCall
	for _, c := range calls {
		out = append(out, ChatToolCall{ID: c.ID, Type: "function", Function: FunctionCall{Name: c.Name, Arguments: c.Arguments}})
	}
	return out
}

// deltas groups one step's parser events into the deltas to stream, in
// order: reasoning and content text, a call's start (id, type, name and
// the arguments that came with it) and its argument fragments.
func deltas(evs []chat.Event) []ChatDelta {
	var out []ChatDelta
	last := func() *ChatDelta {
		if len(out) == 0 {
			return nil
		}
		return &out[len(out)-1]
	}
	for _, e := range evs {
		d := last()
		switch e.Kind {
		case chat.Reasoning:
			if d != nil && d.ReasoningContent != nil {
				*d.ReasoningContent += e.Text
				continue
			}
			s := e.Text
			out = append(out, ChatDelta{ReasoningContent: &s})
		case chat.Content:
			if e.Text == "" {
				continue
			}
			if d != nil && d.Content != nil {
				*d.Content += e.Text
				continue
			}
			s := e.Text
			out = append(out, ChatDelta{Content: &s})
		case chat.CallStart:
			out = append(out, ChatDelta{ToolCalls: []ToolCallDelta{{Index: e.Call, ID: e.ID, Type: "function",
				Function: FunctionDelta{Name: e.Name}}}})
		case chat.CallArguments:
			if d != nil && len(d.ToolCalls) == 1 && d.ToolCalls[0].Index == e.Call {
				d.ToolCalls[0].Function.Arguments += e.Text
				continue
			}
			out = append(out, ChatDelta{ToolCalls: []ToolCallDelta{{Index: e.Call, Function: FunctionDelta{Arguments: e.Text}}}})
		}
	}
	return out
}
