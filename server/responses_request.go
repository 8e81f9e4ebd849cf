package server

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/deltafin/deltafin/chat"
)

// respRecord is a validated Responses request as the store keeps it (the
// job's Request): the conversation to render, the engine input once
// planned, and the settings the response object echoes.
type respRecord struct {
	Model        string  `json:"model"`
	CreatedAt    int64   `json:"created_at"`
	Instructions *string `json:"instructions,omitempty"`
	PreviousID   *string `json:"previous_response_id,omitempty"`
	MaxOutput    *int    `json:"max_output_tokens,omitempty"`
	Effort       *string `json:"effort,omitempty"` // as sent; chat.NearestEffort maps it
	Thinking     bool    `json:"thinking"`
	Summary      *string `json:"summary,omitempty"` // reasoning.summary as sent, echoed
	// Format is text.format as sent (json_object or json_schema; absent
	// for text), in the Responses API's flat shape.
	Format json.RawMessage `json:"format,omitempty"`
	// Ignored are the lenient fields that came and were not acted on.
	Ignored []string `json:"-"`
	// Messages is the whole conversation (earlier responses' turns
	// included, the instructions not: they do not carry over); Input is
	// this request's part of it, with the ids input_items lists.
	Messages []convMessage `json:"messages"`
	Input    []convMessage `json:"input"`
	// Prompt and MaxNew are the engine input; Stop the stop sequences.
	Prompt     []int             `json:"prompt"`
	MaxNew     int               `json:"max_new"`
	Stop       []string          `json:"stop,omitempty"`
	Background bool              `json:"background"`
	Store      bool              `json:"store"`
	Metadata   map[string]string `json:"metadata,omitempty"`
	// Temperature and TopP are echoed; Sampling is what the engine runs
	// with, its seed included, so a resumed job continues the same
	// random stream (nil in a record stored before sampling: greedy).
	Temperature float64         `json:"temperature"`
	TopP        float64         `json:"top_p"`
	Sampling    *storedSampling `json:"sampling,omitempty"`
	samp        samplingFields  // as sent; planResponse resolves it
	// Tools are the declared functions as sent (flat; the response echoes
	// them), ToolChoice the tool_choice as sent; Choice and ToolName are
	// what it means to the renderer (tools.go), Serial is
	// parallel_tool_calls false and MaxCalls max_tool_calls.
	Tools      []json.RawMessage `json:"tools,omitempty"`
	ToolChoice json.RawMessage   `json:"tool_choice,omitempty"`
	Choice     string            `json:"choice,omitempty"`
	ToolName   string            `json:"tool_name,omitempty"`
	Serial     bool              `json:"serial,omitempty"`
	MaxCalls   int               `json:"max_calls,omitempty"`
}

// convMessage is one message of a stored conversation: a system, user or
// assistant message (an assistant's function_call items are its Calls) or
// a function_call_output item (role tool, CallID the call it answers).
type convMessage struct {
	ID        string     `json:"id,omitempty"`
	Role      string     `json:"role"` // system | user | assistant | tool
	Content   string     `json:"content"`
	Reasoning string     `json:"reasoning,omitempty"`
	Calls     []convCall `json:"calls,omitempty"`
	CallID    string     `json:"call_id,omitempty"`
	// CallsOnly marks an assistant turn made of function_call items alone
	// (input_items lists no message for it).
	CallsOnly bool `json:"calls_only,omitempty"`
}

// convCall is a function_call item: ID is the item's (fc_…), CallID the
// call's (call_…).
type convCall struct {
	ID        string `json:"id,omitempty"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// decodeResponseRequest validates a POST /v1/responses body; it does not
// yet resolve previous_response_id or tokenize (planResponse does).
func decodeResponseRequest(body []byte, lim limits) (*respRecord, bool, *apiError) {
	var req ResponseRequest
	body, ignored := splitLenient(body, req)
	if err := decodeStrict(body, &req); err != nil {
		return nil, false, jsonError(err, "")
	}
	r := &respRecord{Model: req.Model, Instructions: req.Instructions, PreviousID: req.PreviousResponseID,
		MaxOutput: req.MaxOutputTokens, Thinking: true, Store: req.Store == nil || *req.Store,
		Background: req.Background != nil && *req.Background, Metadata: req.Metadata}
	r.Ignored = ignored
	if e := checkModel(req.Model, lim); e != nil {
		return nil, false, e
	}
	r.Model = lim.modelID // any name is served by the loaded model
	r.samp = samplingFields{temperature: req.Temperature, topP: req.TopP, topK: req.TopK, minP: req.MinP, seed: req.Seed}
	if e := checkSampling(r.samp, nil, nil, nil, nil); e != nil {
		return nil, false, e
	}
	stream := req.Stream != nil && *req.Stream
	if req.StreamOptions != nil && !stream {
		return nil, false, invalid(codeInvalidValue, "stream_options", "stream_options is only allowed when stream is true")
	}
	if r.Background && !r.Store {
		return nil, false, invalid(codeInvalidValue, "background", "a background response must be stored: drop store=false")
	}
	n, e := maxTokens("max_output_tokens", req.MaxOutputTokens)
	if e != nil {
		return nil, false, e
	}
	r.MaxNew = n
	if req.Reasoning != nil {
		// The reasoning item's summary is K3's whole reasoning text,
		// whatever summary asks for (auto, concise, detailed): K3 writes
		// no separate summary.
		for _, sm := range []*string{req.Reasoning.Summary, req.Reasoning.GenerateSummary} {
			if sm == nil {
				continue
			}
			switch *sm {
			case "auto", "concise", "detailed", "none":
				r.Summary = sm
			default:
				return nil, false, invalid(codeInvalidValue, "reasoning.summary", "must be auto, concise, detailed or none, not %q", *sm)
			}
		}
		if req.Reasoning.Effort != nil {
			tc, e := checkThinking(nil, nil, req.Reasoning.Effort, "reasoning.effort")
			if e != nil {
				return nil, false, e
			}
			r.Effort, r.Thinking = req.Reasoning.Effort, tc.thinking
		}
	}
	if r.Stop, e = checkStop(req.Stop); e != nil {
		return nil, false, e
	}
	if e := checkResponseFields(&req, r); e != nil {
		return nil, false, e
	}
	if e := r.checkTools(&req); e != nil {
		return nil, false, e
	}
	if r.Input, e = checkInput(req.Input); e != nil {
		return nil, false, e
	}
	return r, stream, nil
}

// checkResponseFields refuses what this server cannot honour and reads
// text.format.
func checkResponseFields(req *ResponseRequest, r *respRecord) *apiError {
	for i, inc := range req.Include {
		// Codex asks for reasoning.encrypted_content with store=false;
		// the reasoning item carries K3's reasoning in the clear.
		if inc != "reasoning.encrypted_content" {
			return unsupported(fmt.Sprintf("include[%d]", i), "%q is not available", inc)
		}
		r.Ignored = append(r.Ignored, "include")
	}
	switch {
	case req.TopLogprobs != nil && *req.TopLogprobs != 0:
		return unsupported("top_logprobs", "logprobs are not available")
	case !isNull(req.Conversation):
		return unsupported("conversation", "conversations are not available; chain responses with previous_response_id")
	case !isNull(req.Prompt):
		return unsupported("prompt", "prompt templates are not available")
	case req.Truncation != nil && *req.Truncation != "disabled":
		return unsupported("truncation", "only \"disabled\": a conversation longer than the context is refused, never cut")
	}
	if req.Text != nil {
		if req.Text.Verbosity != nil {
			switch *req.Text.Verbosity {
			case "low", "medium", "high":
				r.Ignored = append(r.Ignored, "text.verbosity")
			default:
				return invalid(codeInvalidValue, "text.verbosity", "must be low, medium or high, not %q", *req.Text.Verbosity)
			}
		}
		if !isNull(req.Text.Format) {
			if _, _, e := textFormat(req.Text.Format); e != nil {
				return e
			}
			var f struct {
				Type string `json:"type"`
			}
			_ = json.Unmarshal(req.Text.Format, &f)
			if f.Type != "text" {
				r.Format = req.Text.Format
			}
		}
	}
	return nil
}

// textFormat reads the Responses API's text.format, {"type":"json_schema",
// "name":…, "schema":…, "strict":…} (flat), with chat's response_format
// machinery (tools.go): the same instruction to the renderer and, for a
// strict schema, the same check of the answer.
func textFormat(raw json.RawMessage) (*chat.ResponseFormat, func(string) *OutputError, *apiError) {
	var f struct {
		Type        string          `json:"type"`
		Name        json.RawMessage `json:"name"`
		Description json.RawMessage `json:"description"`
		Schema      json.RawMessage `json:"schema"`
		Strict      json.RawMessage `json:"strict"`
	}
	if err := decodeStrict(raw, &f); err != nil {
		return nil, nil, jsonError(err, "text.format")
	}
	chatShape := map[string]any{"type": f.Type}
	if f.Type == "json_schema" {
		js := map[string]json.RawMessage{}
		for k, v := range map[string]json.RawMessage{"name": f.Name, "description": f.Description, "schema": f.Schema, "strict": f.Strict} {
			if !isNull(v) {
				js[k] = v
			}
		}
		chatShape["json_schema"] = js
	} else if !isNull(f.Schema) || !isNull(f.Name) || !isNull(f.Strict) {
		return nil, nil, invalid(codeInvalidValue, "text.format", "name, schema and strict are only for type \"json_schema\"")
	}
	b, _ := json.Marshal(chatShape)
	rf, check, e := checkResponseFormat(b)
	if e != nil {
		// Name the field as this API spells it.
		e.param = strings.Replace(strings.Replace(e.param, "response_format.json_schema", "text.format", 1), "response_format", "text.format", 1)
	}
	return rf, check, e
}

// checkTools validates tools (function tools in the flat shape; other
// types are refused), tool_choice, parallel_tool_calls and max_tool_calls
// as the chat endpoint does (tools.go).
func (r *respRecord) checkTools(req *ResponseRequest) *apiError {
	names := map[string]bool{}
	for i, raw := range req.Tools {
		p := fmt.Sprintf("tools[%d]", i)
		var head struct {
			Type string `json:"type"`
		}
		if kindOf(raw) != '{' || json.Unmarshal(raw, &head) != nil {
			return invalid(codeInvalidValue, p, "a tool must be an object")
		}
		if head.Type != "function" {
			return unsupported(p+".type", "only function tools are available, not %q", head.Type)
		}
		var t ResponseTool
		if err := decodeStrict(raw, &t); err != nil {
			return jsonError(err, p)
		}
		if e := checkFunction(p, t.Name, t.Parameters, names); e != nil {
			return e
		}
	}
	var e *apiError
	if r.Choice, r.ToolName, e = checkToolChoice(req.ToolChoice, names, true); e != nil {
		return e
	}
	r.Tools, r.ToolChoice = req.Tools, req.ToolChoice
	r.Serial = req.ParallelToolCalls != nil && !*req.ParallelToolCalls
	if req.MaxToolCalls != nil {
		if *req.MaxToolCalls < 1 {
			return invalid(codeInvalidValue, "max_tool_calls", "must be at least 1, got %d", *req.MaxToolCalls)
		}
		r.MaxCalls = *req.MaxToolCalls
	}
	return nil
}

// chatTool is a flat function tool in chat's shape, {"type":"function",
// "function":{…}} with the fields that were sent, so that the prompt is
// the one a chat request with the same tool renders.
func chatTool(raw json.RawMessage) chat.Tool {
	var t ResponseTool
	_ = json.Unmarshal(raw, &t) // validated by checkTools
	fn := map[string]json.RawMessage{}
	name, _ := json.Marshal(t.Name)
	fn["name"] = name
	for k, v := range map[string]json.RawMessage{"description": t.Description, "parameters": t.Parameters, "strict": t.Strict} {
		if !isNull(v) {
			fn[k] = v
		}
	}
	b, _ := json.Marshal(map[string]any{"type": "function", "function": fn})
	return chat.Tool(b)
}

// parseOptions are the chat parser's settings: call ids from the
// response's id, and at most one call without parallel_tool_calls.
func (r *respRecord) parseOptions(responseID string) chat.ParseOptions {
	ts := toolSettings{parallel: !r.Serial}
	po := ts.parseOptions(responseID)
	if r.MaxCalls > 0 && (po.MaxCalls == 0 || r.MaxCalls < po.MaxCalls) {
		po.MaxCalls = r.MaxCalls
	}
	return po
}

// checkInput reads input: a string (one user message) or an array of
// message items and earlier reasoning items (a reasoning item belongs to
// the assistant message after it).
func checkInput(raw json.RawMessage) ([]convMessage, *apiError) {
	if isNull(raw) {
		return nil, invalid(codeMissing, "input", "input is required")
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []convMessage{{Role: "user", Content: s}}, nil
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil, invalid(codeInvalidValue, "input", "must be a string or an array of input items")
	}
	if len(items) == 0 {
		return nil, invalid(codeMissing, "input", "at least one input item is required")
	}
	var out []convMessage
	var reasoning []string
	for i, raw := range items {
		p := fmt.Sprintf("input[%d]", i)
		var it InputItem
		if err := decodeStrict(raw, &it); err != nil {
			return nil, jsonError(err, p)
		}
		switch it.Type {
		case "function_call":
			c, e := checkFunctionCall(p, it)
			if e != nil {
				return nil, e
			}
			// A call belongs to the assistant message (or calls) right
			// before it, as a turn's output lists them; else it is a turn
			// of its own.
			if n := len(out); n > 0 && out[n-1].Role == "assistant" && len(reasoning) == 0 {
				out[n-1].Calls = append(out[n-1].Calls, c)
				continue
			}
			out = append(out, convMessage{Role: "assistant", Calls: []convCall{c}, CallsOnly: true, Reasoning: strings.Join(reasoning, "")})
			reasoning = nil
			continue
		case "function_call_output":
			m, e := checkCallOutput(p, it)
			if e != nil {
				return nil, e
			}
			if len(reasoning) > 0 {
				return nil, invalid(codeInvalidValue, p, "a reasoning item must precede an assistant message")
			}
			out = append(out, m)
			continue
		case "reasoning":
			var parts []InputPart
			if !isNull(it.Content) {
				if err := json.Unmarshal(it.Content, &parts); err != nil {
					return nil, invalid(codeInvalidValue, p+".content", "must be an array of reasoning_text parts")
				}
			}
			if len(parts) == 0 && !isNull(it.Summary) {
				// Clients that keep only the summary (the AI SDK, Codex)
				// send it back; here it is the whole reasoning.
				if err := json.Unmarshal(it.Summary, &parts); err != nil {
					return nil, invalid(codeInvalidValue, p+".summary", "must be an array of summary_text parts")
				}
			}
			for _, part := range parts {
				if part.Text != nil {
					reasoning = append(reasoning, *part.Text)
				}
			}
			continue
		case "", "message":
		default:
			return nil, unsupported(p+".type", "input items of type %q are not available", it.Type)
		}
		m, e := checkInputMessage(p, it)
		if e != nil {
			return nil, e
		}
		if len(reasoning) > 0 {
			if m.Role != "assistant" {
				return nil, invalid(codeInvalidValue, p, "a reasoning item must precede an assistant message")
			}
			m.Reasoning = strings.Join(reasoning, "")
			reasoning = nil
		}
		out = append(out, m)
	}
	if len(reasoning) > 0 {
		return nil, invalid(codeInvalidValue, fmt.Sprintf("input[%d]", len(items)-1), "a reasoning item must precede an assistant message")
	}
	return out, nil
}

func checkFunctionCall(p string, it InputItem) (convCall, *apiError) {
	var c convCall
	switch {
	case it.CallID == nil || *it.CallID == "":
		return c, invalid(codeMissing, p+".call_id", "a function_call needs its call_id")
	case it.Name == nil || *it.Name == "":
		return c, invalid(codeMissing, p+".name", "a function_call needs the function's name")
	case it.Arguments == nil:
		return c, invalid(codeMissing, p+".arguments", "a function_call needs its arguments")
	case !isNull(it.Content) || !isNull(it.Output) || it.Role != "":
		return c, invalid(codeInvalidValue, p, "a function_call has call_id, name and arguments, not role, content or output")
	}
	c = convCall{CallID: *it.CallID, Name: *it.Name, Arguments: *it.Arguments}
	if it.ID != nil {
		c.ID = *it.ID
	}
	return c, nil
}

// checkCallOutput reads a function_call_output: its output is a string
// or an array of input_text parts.
func checkCallOutput(p string, it InputItem) (convMessage, *apiError) {
	m := convMessage{Role: "tool"}
	switch {
	case it.CallID == nil || *it.CallID == "":
		return m, invalid(codeMissing, p+".call_id", "a function_call_output needs the call_id it answers")
	case isNull(it.Output):
		return m, invalid(codeMissing, p+".output", "a function_call_output needs its output")
	case !isNull(it.Content) || it.Role != "" || it.Name != nil || it.Arguments != nil:
		return m, invalid(codeInvalidValue, p, "a function_call_output has call_id and output, not role, content, name or arguments")
	}
	m.CallID = *it.CallID
	if it.ID != nil {
		m.ID = *it.ID
	}
	if json.Unmarshal(it.Output, &m.Content) == nil {
		return m, nil
	}
	var parts []json.RawMessage
	if json.Unmarshal(it.Output, &parts) != nil {
		return m, invalid(codeInvalidValue, p+".output", "must be a string or an array of input_text parts")
	}
	for j, raw := range parts {
		pp := fmt.Sprintf("%s.output[%d]", p, j)
		var part InputPart
		if err := decodeStrict(raw, &part); err != nil {
			return m, jsonError(err, pp)
		}
		if part.Type != "input_text" || part.Text == nil {
			return m, unsupported(pp, "only input_text parts are available in a function_call_output, not %q", part.Type)
		}
		m.Content += *part.Text
	}
	return m, nil
}

func checkInputMessage(p string, it InputItem) (convMessage, *apiError) {
	m := convMessage{Role: it.Role}
	if it.ID != nil {
		m.ID = *it.ID
	}
	switch it.Role {
	case "user", "assistant", "system":
	case "developer":
		m.Role = "system"
	case "":
		return m, invalid(codeMissing, p+".role", "a message needs a role")
	default:
		return m, invalid(codeInvalidValue, p+".role", "unknown role %q: expected user, assistant, system or developer", it.Role)
	}
	if isNull(it.Content) {
		return m, invalid(codeMissing, p+".content", "a message needs content")
	}
	var s string
	if json.Unmarshal(it.Content, &s) == nil {
		m.Content = s
		return m, nil
	}
	var parts []json.RawMessage
	if json.Unmarshal(it.Content, &parts) != nil {
		return m, invalid(codeInvalidValue, p+".content", "must be a string or an array of content parts")
	}
	var text strings.Builder
	for j, raw := range parts {
		pp := fmt.Sprintf("%s.content[%d]", p, j)
		var part InputPart
		if err := decodeStrict(raw, &part); err != nil {
			return m, jsonError(err, pp)
		}
		switch part.Type {
		case "input_text", "output_text":
			if part.Text == nil {
				return m, invalid(codeMissing, pp+".text", "a text part needs text")
			}
			text.WriteString(*part.Text)
		case "input_image":
			return m, unsupported(pp, "image parts are not supported: this model reads text only")
		case "input_file":
			return m, unsupported(pp, "file parts are not supported: send the text")
		default:
			return m, invalid(codeInvalidValue, pp+".type", "unknown content part type %q", part.Type)
		}
	}
	m.Content = text.String()
	return m, nil
}

// render turns a record's conversation into chat messages and options.
func (r *respRecord) render() ([]chat.Message, chat.Options) {
	var msgs []chat.Message
	if r.Instructions != nil && *r.Instructions != "" {
		msgs = append(msgs, chat.Message{Role: "system", Content: *r.Instructions})
	}
	for _, m := range r.Messages {
		cm := chat.Message{Role: m.Role, Content: m.Content, ReasoningContent: m.Reasoning, ToolCallID: m.CallID}
		for _, c := range m.Calls {
			cm.ToolCalls = append(cm.ToolCalls, chat.ToolCall{ID: c.CallID, Type: "function",
				Function: chat.FunctionCall{Name: c.Name, Arguments: c.Arguments}})
		}
		msgs = append(msgs, cm)
	}
	o := chat.DefaultOptions()
	o.Thinking = r.Thinking
	if r.Effort != nil && r.Thinking {
		if ef, on, err := chat.NearestEffort(*r.Effort); err == nil && on {
			o.Effort = ef // validated by decodeResponseRequest
		}
	}
	if !isNull(r.Format) {
		o.ResponseFormat, _, _ = textFormat(r.Format) // validated by checkResponseFields
	}
	o.ToolChoice, o.ToolName = r.Choice, r.ToolName
	for _, t := range r.Tools {
		o.Tools = append(o.Tools, chatTool(t))
	}
	return msgs, o
}
